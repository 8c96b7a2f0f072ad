"""The tensor trace: how a call of a primitive on Tensors is recorded.

Tensors are boxes of one process-wide reverse trace, :data:`TRACE` (a :class:`TensorTrace`,
a kind of the engine's ``ReverseTrace``), whose level (0) is below every functional
transform's, and which is never closed. So every ``funcgrad.numpy`` primitive called on a
Tensor reaches, through the primitive wrapper, the core's one recording path,
``ReverseTrace.process``, whose steps the Tensor trace overrides (it has no ``process`` of
its own):

0. ``record_one``: the commonest calls (Tensors and Parameters, or the nn bridge's boxes, none a
   stale view, no keyword arguments, a primitive of one result) recorded in one frame, as
   the steps below would record them (the one short way left: the steps alone cost ~10 % more
   per Tensor op, docs/architecture.md): one Tensor that requires grad in its own narrow frame,
   the wider calls (several boxes, the bridge's, views, named calls, no node) in ``_record_wide``;
1. ``link``: the Tensors become their arrays and, if grad mode is on and some input requires
   grad, a :class:`PrimNode` (a kind of the engine's ``VJPNode``, of the primitive's PyTorch
   class) is made, linked to the inputs' nodes;
2. ``run``: the raw arrays are computed by the primitive's raw function;
3. ``save_and_box``: the node keeps what the primitive's VJP rules read, and only that (the
   declared ``reads``, applied by the skeleton): the arrays with their version counters, as
   :class:`SavedTensor` objects (hooks, ``_raw_saved_*``) when asked; the results are
   Tensors; views (reshape, transpose, basic indexing ...) share their base's version counter
   and remember how to replay themselves on the base, so that an in-place change through a
   view can rebase the graph (:func:`apply_inplace`, the ``CopySlices`` node).

Backward is the engine's ``backward_pass`` with this layer's visitor (``backward.py``).
What the steps make lives beside this module, one concern each: the boxes and a view's
history (``boxes.py``), the nodes (``nodes.py``; a primitive's node, ``prim_node.py``), saved
tensors (``saved_tensors.py``), views and ``CopySlices`` (``views.py``), in-place writes
(``inplace_writes.py``), PyTorch's names and messages (``torch_names.py``), saved-tensor hooks
(``saved_hooks.py``), NumPy's error state (``quiet.py``), the debugging flags
(``debug_modes.py``), forward AD's levels (``dual_trace.py``) and the registered Tensor class
(``tensor_class.py``).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from ..core import Box, Primitive, Trace
from ..core.reverse import _KEEP_ALL, _MIN_DROP_BYTES, USE_STEPS, ArraySpec, ReverseTrace, _drops, _save_everything
from .boxes import GraphBox, NumpyBox, _as_array, _refresh_view, get_accumulator, register_trace
from .debug_modes import anomaly, profiling, user_stack
from .grad_mode import state as _mode
from .nodes import _METAS, AccumulateGrad, _next_seq, _out_meta, target
from .prim_node import _SAVED_KEYS, PrimNode, _expose_saved
from .quiet import context_busy, fp_quiet, fp_restore, quiet_run
from .saved_hooks import _hook_state

from .tensor_class import _PARAM, _TENSOR_CLS
from .torch_names import _INFERENCE_SAVED, NAMING, named_node_class, torch_name
from .views import VIEW_PRIMITIVES, mark_view

__all__ = ["TRACE", "TensorTrace"]


_new = object.__new__
_new_node: Callable[[type], Any] = object.__new__


def _torch_shape_error(prim: Primitive, args: list[Any], err: ValueError) -> Exception:
    """NumPy's ValueError for operands whose shapes do not fit, as PyTorch's RuntimeError
    (the type Tensor code catches); any other error unchanged."""
    msg = str(err)
    shapes = [tuple(a.shape) for a in args if hasattr(a, "shape")]
    if "could not be broadcast" in msg:
        acc: tuple[Any, ...] = ()
        for sb in shapes:  # fold left, as PyTorch reports it: tensor a is what came before
            n = max(len(acc), len(sb))
            for k in range(1, n + 1):  # from the right, as broadcasting aligns them
                a = acc[-k] if k <= len(acc) else 1
                b = sb[-k] if k <= len(sb) else 1
                if a != b and a != 1 and b != 1:
                    return RuntimeError(
                        f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                        f"non-singleton dimension {n - k}"
                    )
            acc = tuple(np.broadcast_shapes(acc, sb))
        return RuntimeError(msg)
    if len(shapes) >= 2 and "mismatch in its core dimension" in msg:
        fmt = ["x".join(map(str, sh)) for sh in shapes[:2]]
        return RuntimeError(f"{prim.name}: mat1 and mat2 shapes cannot be multiplied ({fmt[0]} and {fmt[1]})")
    if "input array dimensions except for the concatenation axis" in msg or "must have the same shape" in msg:
        return RuntimeError(f"{prim.name}: sizes of tensors must match: {msg}")
    return err


class TensorTrace(ReverseTrace):
    """The reverse trace that Tensors belong to: level 0, always open, never on any thread's stack.

    A kind of :class:`~funcgrad.core.reverse.ReverseTrace` whose tape is the graph of
    ``grad_fn`` nodes (:class:`Node`, a kind of ``VJPNode``). It records through the core's
    one recording path, ``ReverseTrace.process``, and overrides only its steps: the commonest
    calls in one frame (:meth:`record_one`), the inputs and the node (:meth:`link`: the Tensors,
    PyTorch's node class, only when grad mode is on and an input requires grad), the raw call
    (:meth:`run`: NumPy's warnings silenced, PyTorch's shape errors, the profiler), what the node
    saves and the results (:meth:`save_and_box`: version-checked entries, packed by saved-tensor
    hooks; Tensors, views of their base). The graph is
    walked by ``core.reverse.backward_pass`` with the Tensor layer's visitor. While an
    ``ft.func`` transform runs a function, :data:`TRACE` is of the subclass
    ``_func_support.FuncTransformTrace``.
    """

    __slots__ = ()
    opaque_results = False  # every result is a Tensor

    def __init__(self) -> None:
        Trace.__init__(self, "funcgrad.tensor", level=0)  # below every transform (their levels count from 1)
        self.keep_all = False
        self.min_drop_bytes = _MIN_DROP_BYTES
        self.active = True

    def __enter__(self) -> "TensorTrace":
        raise RuntimeError("the tensor trace is always open; it is not entered")

    def new_input(self, value: Any) -> Any:
        return _TENSOR_CLS[0]._make(value, requires_grad=True)  # a leaf

    def record_one(self, prim: Primitive, args: list[Any], argnums: list[Any]) -> Any:
        """The commonest calls in one frame, what the steps make (``tests/test_recording_path.py`` checks);
        any other call: ``USE_STEPS``. The commonest of all first, in the fewest bytecodes: one Tensor
        argument (not a view, not an inference tensor) that requires grad, grad mode on, no op naming the
        node, a differentiable primitive of one result that makes no view. The wider calls
        (:func:`_record_wide`): several boxes, the nn bridge's boxes, views, named calls, calls that make
        no node."""
        st = _mode
        if not st.enabled or st.inference or profiling.active or anomaly.enabled:
            return USE_STEPS
        i = argnums[0]
        b = args[i]
        if len(argnums) != 1 or b.__class__ is not _TENSOR_CLS[0] or NAMING[0] or b._base is not None \
                or not b._requires_grad or b._inference:
            return _record_wide(prim, args, argnums, i, b)
        cls = _ONE_TENSOR_CLASS.get(prim)
        if not cls:
            if cls is None:
                cls = _ONE_TENSOR_CLASS[prim] = prim.differentiable and not prim.multiple_results \
                    and prim not in VIEW_PRIMITIVES and _node_class(prim)
            if not cls:
                return _record_wide(prim, args, argnums, i, b)
        args[i] = v = b._value
        n = len(args)
        fast = prim.fast_types
        for a in args:  # (run)
            if type(a) not in fast:
                ans = _not_plain_call(prim, args, NO_KWARGS)
                break
        else:
            try:
                ans = quiet_run(prim.fast_fn, v) if n == 1 else quiet_run(prim.fast_fn, *args)
            except ValueError as err:
                raise _torch_shape_error(prim, args, err) from None
            except RuntimeError as err:
                if not context_busy(err):
                    raise
                ans = _raw_call(prim, args, NO_KWARGS)
        if type(ans) is not np.ndarray:
            ans = _as_array(ans)
        parent = b._node  # (link)
        if parent is None:
            parent = get_accumulator(b)
        elif parent._n_outputs != 1:
            parent = target(parent, b._output_nr)
        node = _new_node(cls)
        node.prim = prim
        node.parents = [parent]
        node.argnums = node._inputs = argnums
        node.kwargs = NO_KWARGS
        node.out_index = node.versions = None
        node._seq = _next_seq()
        node._released = False
        node.args = args
        drop = prim.drop_cache.get((n, i)) if prim.reads is not None and not _save_everything.on else _KEEP_ALL
        if drop is None:
            drop = _drops(prim, argnums, n)
        out = _new(_TENSOR_CLS[0])  # (save_and_box; GraphBox._make, inline)
        out._value = ans
        out._trace = TRACE
        out._node = node
        out._output_nr = 0
        out._requires_grad = True
        out._version_counter = [0]
        out._base = None
        out._view_fns = None
        out._view_version = 0
        out._inference = False
        saved: tuple[Any, ...] = ()
        if i not in drop[0]:  # (save_and_box: b requires grad; its history is its node, a leaf's none)
            avc = b._version_counter
            saved = ((i, b, avc, avc[0], b if b._node is not None else None),)
        elif getattr(v, "nbytes", -1) >= _MIN_DROP_BYTES and not isinstance(v, Box):
            args[i] = ArraySpec(v)  # (process's drop: an unread argument big enough to matter, as its spec)
        if n != 1:  # (the same for the constants beside it)
            for j in drop[0]:
                a = args[j]
                if j != i and getattr(a, "nbytes", -1) >= _MIN_DROP_BYTES and not isinstance(a, Box):
                    args[j] = ArraySpec(a)
        if drop[1]:
            node.ans = [ArraySpec(ans) if getattr(ans, "nbytes", 0) >= _MIN_DROP_BYTES else ans]
        else:
            node.ans = [ans]
            saved += ((-1, None, out._version_counter, 0, None),)
        node._saved = saved
        meta = _METAS.get(ans.shape) if type(ans) is np.ndarray else None  # (_out_meta's common case, inline)
        node._out_meta = meta if meta is not None and meta[0][1] is ans.dtype else _out_meta(ans)
        if saved and _hook_state.stack:
            node._materialize(_hook_state.stack[-1])
        return out

    def link(self, prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
        """The Tensors at ``argnums`` become their arrays, and the call's ``grad_fn`` (of the
        primitive's PyTorch class) is made, linked to the nodes of the inputs that require grad
        (a leaf's ``AccumulateGrad``); the node is None when grad mode is off or no input
        requires grad. Returns (the node, the Tensors). A stale view is refreshed first (one
        that requires grad only when it is linked)."""
        linking = _mode.enabled and prim.differentiable
        if len(argnums) == 1:  # (the commonest call: one Tensor argument)
            i = argnums[0]
            b = args[i]
            if b._base is not None and b._view_version != b._version_counter[0] \
                    and (linking or not b._requires_grad):
                _refresh_view(b)
            args[i] = b._value
            boxes: Any = (b,)
            if kwargs:
                _unbox_kwargs(kwargs)
            if not (linking and b._requires_grad):
                return None, boxes
            parent = b._node
            if parent is None:
                parent = get_accumulator(b)
            elif parent._n_outputs != 1:
                parent = target(parent, b._output_nr)
            parents = [parent]
            live = argnums
        else:
            boxes = []
            parents = []
            live = []
            for i in argnums:
                b = args[i]
                boxes.append(b)
                if b._base is not None and b._view_version != b._version_counter[0] \
                        and (linking or not b._requires_grad):
                    _refresh_view(b)
                args[i] = b._value
                if linking and b._requires_grad:
                    parent = b._node
                    parents.append(get_accumulator(b) if parent is None else target(parent, b._output_nr))
                    live.append(i)
            if kwargs:
                _unbox_kwargs(kwargs)
            if not live:
                return None, boxes
        request = _mode.name_request if NAMING[0] else None  # (torch_names.named: the op names this call's node)
        if request is not None and request[0] is prim:
            name = request[1]  # (a pair: the name of a view first; save_and_box takes the other for a copy)
            node = _new_node(named_node_class(PrimNode, name if type(name) is str else name[0]))
        else:
            node = _new_node(_NODE_CLASS.get(prim) or _node_class(prim))
        node.prim = prim
        node.parents = parents
        node.argnums = live
        node._inputs = argnums
        if kwargs:
            node.kwargs = kwargs
            if not _SAVED_KEYS.issuperset(kwargs):
                _expose_saved(kwargs)
        else:
            node.kwargs = NO_KWARGS
        node.out_index = node.versions = None
        node._seq = _next_seq()
        node._released = False
        return node, boxes

    def run(self, prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> Any:
        """``prim`` on the arrays, NumPy's floating-point warnings silenced, shape errors as PyTorch's
        (straight to ``prim.fast_fn`` when every argument is a plain array); timed when profiling."""
        if profiling.active:
            from .profiler import record_event

            t0 = time.perf_counter()
            ans = _raw_call(prim, args, kwargs)
            record_event(f"aten::{prim.name}", time.perf_counter() - t0)
            return ans
        fast = prim.fast_types
        for a in args:
            if type(a) not in fast:
                return _not_plain_call(prim, args, kwargs)
        try:
            if kwargs:
                return quiet_run(prim.fast_fn, *args, **kwargs)
            return quiet_run(prim.fast_fn, args[0]) if len(args) == 1 else quiet_run(prim.fast_fn, *args)
        except ValueError as err:
            raise _torch_shape_error(prim, args, err) from None
        except RuntimeError as err:
            if not context_busy(err):
                raise
            return _raw_call(prim, args, kwargs)

    def save_and_box(self, prim: Primitive, ans: Any, node: Any, links: Any, args: list[Any],
                     kwargs: dict[Any, Any], argnums: list[Any], drop: tuple[tuple[int, ...], bool]) -> Any:
        """The results as Tensors (NumpyBoxes when every input was one: a rule recorded in create_graph
        mode), a view marked as one of its input. With ``node``, each result's ``grad_fn``; the
        node keeps the arguments, and each Tensor and result a rule reads (not in ``drop``) gets an
        entry of ``node._saved`` (its version counter and version now: an in-place change before
        backward is an error). An inference tensor may not be saved (PyTorch)."""
        boxes = links
        b = boxes[0]
        inference = _mode.inference
        saved: Any = ()
        if len(boxes) == 1:  # (the commonest call: one Tensor argument)
            cls = NumpyBox if b.__class__ is NumpyBox else _TENSOR_CLS[0]
            if node is not None:
                node.args = args
                i = argnums[0]
                if i not in drop[0]:
                    if b._inference:
                        raise RuntimeError(_INFERENCE_SAVED)
                    vc = b._version_counter
                    node_of = b._node  # (b requires grad: a node is made)
                    saved = ((i, b, vc, vc[0], b if node_of is not None and type(node_of) is not AccumulateGrad
                              else None),)
                node._saved = saved
        else:
            cls = NumpyBox
            for a in boxes:
                if a.__class__ is not NumpyBox:
                    cls = _TENSOR_CLS[0]
                    break
            if node is not None:
                node.args = args
                drop_args = drop[0]
                for i, a in zip(argnums, boxes):
                    if i in drop_args:
                        continue
                    if a._inference:
                        raise RuntimeError(_INFERENCE_SAVED)
                    vc = a._version_counter
                    node_of = a._node
                    has_history = a._requires_grad and node_of is not None and type(node_of) is not AccumulateGrad
                    saved += ((i, a, vc, vc[0], a if has_history else None),)
                node._saved = saved
        is_view = argnums[0] == 0 and prim in VIEW_PRIMITIVES
        if is_view and getattr(ans, "base", None) is not None and (inference or any(a._inference for a in boxes)):
            inference = b._inference  # a view is an inference tensor exactly when its base is (PyTorch)
        if prim.multiple_results:
            return _many_boxes(cls, ans, node, drop[1], inference)
        out = _new(cls)  # (GraphBox._make, inline: the commonest result)
        out._value = ans = ans if type(ans) is np.ndarray else _as_array(ans)
        out._trace = TRACE
        out._node = node
        out._output_nr = 0
        out._requires_grad = node is not None
        out._version_counter = vc = [0]
        out._base = None
        out._view_fns = None
        out._view_version = 0
        out._inference = inference
        if is_view:
            mark_view(out, boxes[0], prim, args, kwargs)
            request = _mode.name_request if NAMING[0] else None
            if node is not None and out._base is None and request is not None and request[0] is prim \
                    and type(request[1]) is tuple:  # torch_names.named's name of a result that is no view
                node.__class__ = named_node_class(PrimNode, request[1][1])
        if node is None:
            return out
        if drop[1]:
            node.ans = [ArraySpec(ans) if getattr(ans, "nbytes", 0) >= _MIN_DROP_BYTES else ans]
        else:
            node.ans = [ans]
            node._saved = saved = saved + ((-1, None, vc, vc[0], None),)
        meta = _METAS.get(ans.shape) if type(ans) is np.ndarray else None  # (_out_meta's common case, inline)
        node._out_meta = meta if meta is not None and meta[0][1] is ans.dtype else _out_meta(ans)
        if saved and _hook_state.stack:
            node._materialize(_hook_state.stack[-1])
        if anomaly.enabled:
            node._stack = user_stack()
        return out


def _unbox_kwargs(kwargs: dict[Any, Any]) -> None:
    """Tensors passed by keyword become their arrays."""
    for k, v in list(kwargs.items()):
        if isinstance(v, GraphBox):
            kwargs[k] = v._value


def _many_boxes(cls: Any, ans: Any, node: Any, drop_ans: bool, inference: bool) -> tuple[Any, ...]:
    """The results of a primitive of several results, as :meth:`TensorTrace.save_and_box` makes them."""
    outs = tuple(cls._make(a if type(a) is np.ndarray else _as_array(a), inference=inference) for a in ans)
    if node is None:
        return outs
    entries = node._saved
    node.ans = ans_saved = []
    for k, o in enumerate(outs):
        v = o._value
        o._node, o._output_nr, o._requires_grad = node, k, True
        if drop_ans:
            v = ArraySpec(v) if getattr(v, "nbytes", 0) >= _MIN_DROP_BYTES else v
        else:
            entries += ((~k, None, o._version_counter, o._version_counter[0], None),)
        ans_saved.append(v)
    node._saved = entries
    node._out_meta = tuple(_out_meta(o._value)[0] for o in outs)
    if entries and _hook_state.stack:
        node._materialize(_hook_state.stack[-1])
    node._n_outputs = len(outs)
    node._short_step = False
    if anomaly.enabled:
        node._stack = user_stack()
    return outs

TRACE = TensorTrace()
register_trace(TRACE)

def _raw_call(prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> Any:
    """``prim`` on raw values, NumPy's floating-point warnings silenced: straight to ``prim.fast_fn``
    when every argument is a plain array (as ``ReverseTrace.process``), shape errors as PyTorch's."""
    fast = prim.fast_types
    for a in args:
        if type(a) not in fast:
            return _not_plain_call(prim, args, kwargs)
    try:
        try:
            return quiet_run(prim.fast_fn, *args, **kwargs)
        except RuntimeError as err:
            if not context_busy(err):
                raise
        token = fp_quiet()
        try:
            return prim.fast_fn(*args, **kwargs)
        finally:
            fp_restore(token)
    except ValueError as err:
        raise _torch_shape_error(prim, args, err) from None


def _not_plain_call(prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> Any:
    """:func:`_raw_call` of arguments that are not all plain arrays (Python numbers, tuples, another
    backend's arrays, boxes of a lower trace): the primitive's raw function, or its traced entry
    point when a lower trace's box is among them."""
    token = fp_quiet()
    try:
        for b in args:
            if isinstance(b, Box):  # a box of a lower trace (a transform's value)
                return prim.call(*args, **kwargs)
        return prim.raw(*args, **kwargs)
    except ValueError as err:
        raise _torch_shape_error(prim, args, err) from None
    finally:
        fp_restore(token)


def _record_wide(prim: Primitive, args: list[Any], argnums: list[Any], i: int, b: Any) -> Any:
    """:meth:`TensorTrace.record_one`'s wider calls (grad mode on, no profiler, no anomaly mode: checked
    there; ``b`` the box at ``argnums[0]``, ``i``): Tensor arguments (or, from the ``funcgrad.nn`` bridge,
    recorded NumPy-semantics boxes: all of one class, the result's; Parameters count as Tensors), none of
    them an inference tensor or a
    stale view (one whose base changed in place since: the steps refresh it), no keyword arguments, a primitive of one result. Its node is named by the op that asks
    (``torch_names.named``); with no input that requires grad, or no derivative, the result has no node;
    a view is marked as one of its input. What the steps make (``tests/test_recording_path.py`` checks).
    Any other call: ``USE_STEPS``."""
    st = _mode
    kind = b.__class__
    if kind is not _TENSOR_CLS[0]:
        if kind is _PARAM[0]:  # (a Parameter among Tensors: the result is a Tensor, as the steps make it)
            kind = _TENSOR_CLS[0]
        elif kind is not NumpyBox:
            return USE_STEPS
    cls: Any = _ONE_BOX_CLASS.get(prim)
    if cls is None:
        cls = _ONE_BOX_CLASS[prim] = False if prim.multiple_results \
            else _node_class(prim) if prim.differentiable else _UNRECORDED
    if not cls:
        return USE_STEPS
    one = len(argnums) == 1
    if one:  # (a view as it was made: no refresh to run, so what the steps make; a stale one takes them)
        if b._inference or b._base is not None and b._view_version != b._version_counter[0]:
            return USE_STEPS
        boxes: Any = None
        live = argnums if b._requires_grad and cls is not _UNRECORDED else ()
        args[i] = b._value
    else:  # (the boxes checked, unboxed and linked in one loop)
        live = []
        boxes = []
        parents = []
        recorded = cls is not _UNRECORDED
        for j in argnums:
            a = args[j]
            if a.__class__ is not kind and (a.__class__ is not _PARAM[0] or kind is NumpyBox) or a._inference \
                    or a._base is not None \
                    and a._view_version != a._version_counter[0]:
                for k, a in zip(argnums, boxes):  # (the boxes back: the steps take the call as it came)
                    args[k] = a
                return USE_STEPS
            boxes.append(a)
            args[j] = a._value
            if a._requires_grad and recorded:  # (link)
                live.append(j)
                parent = a._node
                if parent is None:
                    parent = get_accumulator(a)
                elif parent._n_outputs != 1:
                    parent = target(parent, a._output_nr)
                parents.append(parent)
    fast = prim.fast_types
    for a in args:  # (run)
        if type(a) not in fast:
            ans = _not_plain_call(prim, args, NO_KWARGS)
            break
    else:
        try:
            ans = quiet_run(prim.fast_fn, args[0]) if len(args) == 1 else quiet_run(prim.fast_fn, *args)
        except ValueError as err:
            raise _torch_shape_error(prim, args, err) from None
        except RuntimeError as err:
            if not context_busy(err):
                raise
            ans = _raw_call(prim, args, NO_KWARGS)
    if type(ans) is not np.ndarray:
        ans = _as_array(ans)
    if not live:  # nothing to record: no node (save_and_box's result of a call without one)
        out = _new(kind)
        out._value = ans
        out._trace = TRACE
        out._node = None
        out._output_nr = 0
        out._requires_grad = False
        out._version_counter = [0]
        out._base = None
        out._view_fns = None
        out._view_version = 0
        out._inference = False
        if prim in VIEW_PRIMITIVES and i == 0:
            mark_view(out, b, prim, args, NO_KWARGS)
        return out
    request = None
    if NAMING[0]:  # (torch_names.named: the op names this call's node)
        request = st.name_request
        if request is not None and request[0] is prim:
            name = request[1]  # (a pair: the name of a view first, the other for a copy, below)
            cls = named_node_class(PrimNode, name if type(name) is str else name[0])
    if one:  # (link)
        parent = b._node
        if parent is None:
            parent = get_accumulator(b)
        elif parent._n_outputs != 1:
            parent = target(parent, b._output_nr)
        parents = [parent]
    node = _new_node(cls)
    node.prim = prim
    node.parents = parents
    node.argnums = live
    node._inputs = argnums
    node.kwargs = NO_KWARGS
    node.out_index = node.versions = None
    node._seq = _next_seq()
    node._released = False
    node.args = args
    if prim.reads is None or _save_everything.on:  # (process's drop, its cached case inline)
        drop = _KEEP_ALL
    else:
        found = prim.drop_cache.get((len(args), i) if one else (len(args), *live))
        drop = found if found is not None else _drops(prim, list(live), len(args))
        for j in drop[0]:
            a = args[j]
            if getattr(a, "nbytes", -1) >= _MIN_DROP_BYTES and not isinstance(a, Box):
                args[j] = ArraySpec(a)
    out = _new(kind)  # (save_and_box; GraphBox._make, inline)
    out._value = ans
    out._trace = TRACE
    out._node = node
    out._output_nr = 0
    out._requires_grad = True
    out._version_counter = vc = [0]
    out._base = None
    out._view_fns = None
    out._view_version = 0
    out._inference = False
    saved: tuple[Any, ...] = ()
    if one:
        if i not in drop[0]:  # (b requires grad: its history is its node, unless it is a leaf's)
            node_of = b._node
            avc = b._version_counter
            saved = ((i, b, avc, avc[0], b if node_of is not None and type(node_of) is not AccumulateGrad
                      else None),)
    else:
        keep = drop[0]
        for j, a in zip(argnums, boxes):
            if j not in keep:
                node_of = a._node
                has_history = a._requires_grad and node_of is not None and type(node_of) is not AccumulateGrad
                avc = a._version_counter
                saved += ((j, a, avc, avc[0], a if has_history else None),)
    if drop[1]:
        node.ans = [ArraySpec(ans) if getattr(ans, "nbytes", 0) >= _MIN_DROP_BYTES else ans]
    else:
        node.ans = [ans]
        saved += ((-1, None, vc, 0, None),)
    node._saved = saved
    meta = _METAS.get(ans.shape) if type(ans) is np.ndarray else None  # (_out_meta's common case, inline)
    node._out_meta = meta if meta is not None and meta[0][1] is ans.dtype else _out_meta(ans)
    if saved and _hook_state.stack:
        node._materialize(_hook_state.stack[-1])
    if prim in VIEW_PRIMITIVES and i == 0:
        mark_view(out, b, prim, args, NO_KWARGS)
        if out._base is None and request is not None and request[0] is prim and type(request[1]) is tuple:
            node.__class__ = named_node_class(PrimNode, request[1][1])  # a result that is no view: a copy's name
    return out


# primitive -> its node class when its calls may take TensorTrace.record_one's way (_UNRECORDED: a primitive
# with no derivative, whose calls make no node), else False
_ONE_BOX_CLASS: dict[Any, Any] = {}
_UNRECORDED = object()
# primitive -> its node class when its calls of one Tensor may take record_one's narrowest way, else False
_ONE_TENSOR_CLASS: dict[Any, Any] = {}
NO_KWARGS: dict[str, Any] = {}  # keyword arguments of a call with none, shared by its nodes (never written to)


def _node_class(prim: Primitive) -> type:
    """The node class of ``prim``'s calls, named as PyTorch names it."""
    cls = _NODE_CLASS[prim] = named_node_class(PrimNode, torch_name(prim))
    return cls


_NODE_CLASS: dict[Any, type] = {}  # primitive -> _node_class(primitive)
