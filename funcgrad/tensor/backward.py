"""The backward pass over the tensor graph: ``backward`` and ``autograd.grad``.

One call walks the nodes reachable from the outputs once, in dependency
order (a node runs when every consumer of its outputs has given its
gradient), summing gradients where a value fans out. Gradients travel as raw
arrays (fast path) or, with ``create_graph=True``, as recorded boxes so the
pass is itself differentiable.

Complex numbers: the primitives' rules follow JAX's (linear) convention; the
gradients users see follow PyTorch's (conjugate Wirtinger). The two differ by
a conjugation at the boundary, so seeds are conjugated on the way in, and
gradients on the way out (``.grad``, ``autograd.grad``, hooks, custom
Functions); nothing changes for real dtypes.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from . import graph as _graph
from .graph import AccumulateGrad, GraphBox, Node, NumpyBox, as_numpy_box, as_tensor_box, edge_of
from .forward_ad import paused as _fwad_paused
from .grad_mode import state as _mode
from .tensor import Tensor, _as_tensor, _grad_lock

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
    return Tensor._make(_graph._as_array(g))


def _from_user(t: Any, create_graph: bool) -> Any:
    if t is None:
        return None
    if not isinstance(t, GraphBox):
        t = _as_tensor(t)
    t = _conj(t)
    if create_graph:
        return as_numpy_box(t) if isinstance(t, GraphBox) else t
    return t._value if isinstance(t, GraphBox) else t


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


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


def _input_meta(node: Node, k: int) -> tuple[Any, ...] | None:
    edge = node._edges[k]
    if edge is None:
        return None
    target, nr = edge
    m = target._out_meta
    return m[nr] if nr < len(m) else None


def _run_hooks(hooks: dict[Any, Any] | None, g: Any, create_graph: bool) -> Any:
    if not hooks:
        return g
    t = _to_user(g, create_graph)
    for fn in list(hooks.values()):
        r = fn(t)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a tensor hook must return None or a Tensor, got {type(r).__name__}")
            if tuple(r.shape) != tuple(t.shape):
                raise RuntimeError(
                    f"hook '{getattr(fn, '__name__', 'hook')}' has changed the size of value: expected "
                    f"{list(t.shape)} but got {list(r.shape)}"
                )
            if r.dtype != t.dtype:
                raise RuntimeError(
                    f"hook '{getattr(fn, '__name__', 'hook')}' has changed the type of value (was "
                    f"{t.type()} got {r.type()})"
                )
            if r.device != t.device:
                raise RuntimeError(
                    f"hook '{getattr(fn, '__name__', 'hook')}' has changed the device of value (was "
                    f"{t.device} got {r.device})"
                )
            t = r
    return _from_user(t, create_graph)


def _nan_check(node: Node, outs: list[Any]) -> None:
    for k, g in enumerate(outs):
        if g is None:
            continue
        v = g._value if isinstance(g, GraphBox) else g
        if namespace_of(v).isnan(v).any():
            _anomaly_error(node, RuntimeError(f"Function '{node.name()}' returned nan values in its {k}th output."))


def _anomaly_error(node: Node, err: BaseException) -> None:
    stack = node._stack
    if stack:
        trace = "".join(stack)
        warnings.warn(
            f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{trace}",
            UserWarning, stacklevel=3,
        )
        parent = getattr(stack, "parent", None)
        while parent is not None and parent._stack:  # double backward: where each creator came from
            p_trace = "".join(parent._stack)
            warnings.warn(f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of forward call that "
                          f"induced the previous calculation:\n{p_trace}", UserWarning, stacklevel=3)
            trace += (f"\nPrevious calculation was induced by {parent.name()}. Traceback of forward call that "
                      f"induced the previous calculation:\n{p_trace}")
            parent = getattr(parent._stack, "parent", None)
        msg = f"{err}\n\nTraceback of forward call that caused the error (operation {node.name()}):\n{trace}"
        raise type(err)(msg) from err
    raise err


def _collect(roots: list[Any]) -> dict[Any, Any]:
    """Dependency counts: for each reachable node, how many edges point at it."""
    counts: dict[Any, Any] = {}
    stack = []
    for n in roots:
        if n not in counts:
            counts[n] = 0
            stack.append(n)
    while stack:
        node = stack.pop()
        for e in node._edges:
            if e is None:
                continue
            p = e[0]
            c = counts.get(p)
            if c is None:
                counts[p] = 1
                stack.append(p)
            else:
                counts[p] = c + 1
    return counts


def _needed(counts: dict[Any, Any], targets: set[Any]) -> set[Any]:
    """Nodes from which some target node can be reached (targets included)."""
    memo: dict[Any, Any] = {}
    for start in counts:
        if start in memo:
            continue
        stack = [(start, False)]
        while stack:
            node, done = stack.pop()
            if done:
                memo[node] = node in targets or any(e is not None and memo.get(e[0], False) for e in node._edges)
                continue
            if node in memo:
                continue
            memo[node] = False  # provisional (graphs are acyclic)
            stack.append((node, True))
            for e in node._edges:
                if e is not None and e[0] not in memo:
                    stack.append((e[0], False))
    return {n for n, v in memo.items() if v}


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


def run_backward(*args: Any, **kwargs: Any) -> Any:
    """The backward walk (:func:`_run_backward`), with NumPy's floating-point warnings silenced,
    then the callbacks queued on its :class:`BackwardPass`."""
    token = _graph.fp_quiet()
    bp = BackwardPass()
    stack = _passes.__dict__.setdefault("stack", [])
    stack.append(bp)
    try:
        with _fwad_paused():  # gradients of primals only: dual levels drop tangents in backward
            captured = _run_backward(*args, **kwargs)
        k = 0
        while k < len(bp.callbacks):
            bp.callbacks[k]()
            k += 1
        return captured
    finally:
        stack.pop()
        _graph.fp_restore(token)


def _run_backward(roots: list[Any], keep_graph: bool, create_graph: bool, captures: list[Any] | None = None,
                 accumulate: bool = True) -> dict[Any, Any]:
    """Propagate ``roots`` [(edge, internal grad)] through the graph.

    With ``captures`` [edges], gradients arriving at those edges are returned
    ({edge: grad}) and only nodes leading to them run; leaves are then not
    accumulated into unless ``accumulate``.
    """
    root_nodes = [e[0] for e, _ in roots]
    counts = _collect(root_nodes)
    capture_at: dict[Any, Any] = {}
    needed = None
    if captures is not None:
        for e in captures:
            capture_at.setdefault(e[0], []).append(e[1])
        needed = _needed(counts, set(capture_at))
        counts = {n: 0 for n in needed}
        for n in needed:
            for e in n._edges:
                if e is not None and e[0] in counts:
                    counts[e[0]] += 1
    buffers: dict[Any, Any] = {}
    for (node, nr), g in roots:
        if needed is not None and node not in needed:
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * max(node._n_outputs, nr + 1)
        buf[nr] = _add(buf[nr], g)
    captured: dict[Any, Any] = {}
    ready = [n for n in buffers if counts.get(n, 0) == 0]
    prof = _graph.profiling.active
    prev_mode = _mode.enabled
    _mode.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            buf = buffers.pop(node, None)
            if buf is None:
                buf = [None] * node._n_outputs
            if node._tensor_prehooks:
                for nr, hooks in node._tensor_prehooks.items():
                    if nr < len(buf) and buf[nr] is not None:
                        buf[nr] = _run_hooks(hooks, buf[nr], create_graph)
            if node._retain:
                for nr, ref in list(node._retain.items()):
                    t = ref()
                    if t is not None and nr < len(buf) and buf[nr] is not None:
                        _retain(t, buf[nr], create_graph)
            if isinstance(node, AccumulateGrad):
                var = node.variable
                if var is None:  # the leaf is gone: nobody can read its gradient
                    continue
                if var._hooks and buf[0] is not None:
                    buf[0] = _run_hooks(var._hooks, buf[0], create_graph)
                if node in capture_at:
                    captured[(node, 0)] = buf[0]
                    if not accumulate:
                        continue
                if buf[0] is not None and (accumulate or node not in capture_at):
                    _accumulate(var, buf[0], create_graph)
                continue
            if node in capture_at:
                for nr in capture_at[node]:
                    captured[(node, nr)] = buf[nr] if nr < len(buf) else None
            if needed is not None and not any(e is not None and e[0] in counts for e in node._edges):
                continue  # a captured non-leaf with nothing needed behind it
            if node._prehooks:
                user = [_to_user(g, create_graph) for g in buf]
                for fn in list(node._prehooks.values()):
                    r = fn(tuple(user))
                    if r is not None:
                        user = list(r)
                buf = [_from_user(g, create_graph) for g in user]
            if all(g is None for g in buf):
                outs = [None] * len(node._edges)
            else:
                t0 = time.perf_counter() if prof else 0.0
                anomaly_prev = _graph.anomaly.running
                if _graph.anomaly.enabled:
                    _graph.anomaly.running = node
                try:
                    outs = node.apply(buf, create_graph)
                except Exception as err:  # noqa: BLE001 - re-raised with the forward traceback
                    if node._stack:
                        _anomaly_error(node, err)
                    raise
                finally:
                    _graph.anomaly.running = anomaly_prev
                if prof:
                    from .profiler import record_event

                    record_event(node.name(), time.perf_counter() - t0)
                if _graph.anomaly.enabled and _graph.anomaly.check_nan:
                    _nan_check(node, outs)
            if node._hooks:
                user_in = tuple(_to_user(g, create_graph) for g in outs)
                user_out = tuple(_to_user(g, create_graph) for g in buf)
                for fn in list(node._hooks.values()):
                    r = fn(user_in, user_out)
                    if r is not None:
                        user_in = tuple(r)
                outs = [_from_user(g, create_graph) for g in user_in]
            if not keep_graph:
                node.release()
            for k, e in enumerate(node._edges):
                if e is None:
                    continue
                child, nr = e
                if child not in counts:
                    continue
                g = outs[k]
                if g is not None:
                    meta = _input_meta(node, k)
                    if meta is not None:
                        g = _match(g, meta)
                    cb = buffers.get(child)
                    if cb is None:
                        cb = buffers[child] = [None] * child._n_outputs
                    cb[nr] = _add(cb[nr], g)
                counts[child] -= 1
                if counts[child] == 0:
                    ready.append(child)
    finally:
        _mode.enabled = prev_mode
    return captured


def _retain(t: Tensor, g: Any, create_graph: bool) -> None:
    gu = _to_user(g, create_graph)
    with _grad_lock:
        if t._grad is None:
            t._grad = gu if create_graph else Tensor._make(_copy(gu._value))
        else:
            t._grad = t._grad + gu


def _copy(v: Any) -> Any:
    return namespace_of(v).array(v, copy=True)


def _accumulate(var: Tensor, g: Any, create_graph: bool) -> None:
    """Add a gradient into a leaf's ``.grad``: in place normally, out of place with create_graph."""
    g = _match(g, (var._value.shape, var._value.dtype, None))
    gu = _to_user(g, create_graph)
    with _grad_lock:
        cur = var._grad
        if cur is None:
            if create_graph:
                var._grad = gu
            else:
                var._grad = Tensor._make(_copy(gu._value))
        elif create_graph or cur._requires_grad:
            var._grad = cur + gu
        else:
            cv = cur._value
            if namespace_of(cv) is np and cv.flags.writeable:
                np.add(cv, gu._value, out=cv)
            else:
                cur._value = cv + gu._value
            cur._vc[0] += 1
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


def _make_seeds(outputs: list[Any], grad_outputs: list[Any], create_graph: bool,
                is_grads_batched: bool = False) -> list[Any]:
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
            if out._value.dtype.kind not in "fc":
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but got "
                                   f"{out.dtype}")
            if out._value.dtype.kind == "c":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            ns = namespace_of(out._value)
            g_int = ns.ones(out._value.shape, dtype=out._value.dtype)
        else:
            gt = _as_tensor(g)
            if tuple(gt.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {gt.shape} and output[{i}] has a shape "
                    f"of {out.shape}."
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
    if isinstance(grad_tensors, Tensor) or (grad_tensors is not None and not isinstance(grad_tensors, (list, tuple))):
        grads = [grad_tensors]
    if retain_graph is None:
        retain_graph = create_graph
    if _mode.inference:
        pass
    roots = _make_seeds(outputs, grads, create_graph)
    if inputs is not None:
        ins = _as_list(inputs)
        if not ins:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        edges: list[Any] = []
        for t in ins:
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs to backward() must be Tensors, got {type(t).__name__}")
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edges.append(edge_of(t))
        captured = run_backward(roots, retain_graph, create_graph, captures=edges, accumulate=True)
        for t, e in zip(ins, edges):
            g = captured.get(e)
            if g is not None and not isinstance(e[0], AccumulateGrad):
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
        raise RuntimeError("grad requires at least one input")
    gouts = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    if isinstance(grad_outputs, Tensor):
        gouts = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    for t in ins:
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs to grad() must be Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if is_grads_batched:
        return _batched_grad(outs, ins, gouts, retain_graph, create_graph, allow_unused, materialize_grads)
    edges = [edge_of(t) for t in ins]
    roots = _make_seeds(outs, gouts, create_graph)
    captured = run_backward(roots, retain_graph, create_graph, captures=edges, accumulate=False)
    result: list[Any] = []
    for i, (t, e) in enumerate(zip(ins, edges)):
        g = captured.get(e)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                from .creation import zeros_like

                result.append(zeros_like(t))
            else:
                result.append(None)
            continue
        g = _match(g, (t._value.shape, t._value.dtype, None))
        gu = _to_user(g, create_graph)
        if not create_graph:
            gu = Tensor._make(gu._value)
        result.append(gu)
    return tuple(result)


def _batched_grad(outs: list[Any], ins: list[Any], gouts: list[Any], retain_graph: bool, create_graph: bool,
                  allow_unused: bool, materialize: bool) -> tuple[Any, ...]:
    from .ops import stack

    n = None
    for g in gouts:
        if g is not None:
            n = g.shape[0]
    if n is None:
        raise RuntimeError("is_grads_batched=True requires grad_outputs with a leading batch dimension")
    per: list[Any] = [[] for _ in ins]
    for b in range(n):
        gb = [g[b] if g is not None else None for g in gouts]
        res = grad(outs, ins, gb, retain_graph=True if b < n - 1 else retain_graph, create_graph=create_graph,
                   allow_unused=allow_unused, materialize_grads=materialize)
        for k, r in enumerate(res):
            per[k].append(r)
    out: list[Any] = []
    for k, t in enumerate(ins):
        if any(r is None for r in per[k]):
            out.append(None)
        else:
            out.append(stack(per[k]))
    return tuple(out)


def call_node(node: Node, grads: tuple[Any, ...]) -> Any:
    """``grad_fn(*grads)``: run one node on given output gradients (no accumulation)."""
    internal = [_from_user(g, False) for g in grads]
    prev = _mode.enabled
    _mode.enabled = False
    try:
        outs = node.apply(internal, False)
    finally:
        _mode.enabled = prev
    res = tuple(_to_user(g, False) if g is not None else None for g in outs)
    return res[0] if len(res) == 1 else res
