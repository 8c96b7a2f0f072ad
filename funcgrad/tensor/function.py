"""Custom autograd functions: ``ft.autograd.Function`` with static ``forward``/``backward``.

Example::

    class Exp(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * y

    Exp.apply(ft.randn(3, requires_grad=True)).sum().backward()
"""

from __future__ import annotations

import functools
import math
import warnings
import weakref
from typing import Any, Callable, cast

import numpy as np

from ..backend import namespace_of
from ..core import JVPBox
from . import forward_ad as _fwad
from . import boxes as _boxes
from . import inplace_writes as _inplace
from . import saved_tensors as _saved
from .debug_modes import anomaly, user_stack
from .torch_names import _FREED, named_node_class, view_rebase_error
from .boxes import edge_of, GraphBox
from .nodes import Node
from .grad_mode import no_grad, set_grad_enabled
from .grad_mode import state as _mode
from ._func_support import is_traced
from .tensor import Tensor

DIRTY_NOT_RETURNED = ("Some elements marked as dirty during the forward method were not returned as output. The "
                      "inputs that are modified inplace must all be outputs of the Function.")

# How ``Function.apply`` runs on Tensors holding a transform's traced values (under ft.func): registered
# by _func_function.py (which imports this module), as ``apply_function(cls, args)``.
_TRACED_APPLY: list[Callable[..., Any]] = []


def register_traced_apply(fn: Callable[..., Any]) -> None:
    """Register ``fn(cls, args)`` as ``Function.apply`` on traced Tensors (``_func_function.apply_function``)."""
    _TRACED_APPLY[:] = [fn]

__all__ = ["Function", "FunctionCtx", "once_differentiable", "InplaceFunction", "NestedIOFunction"]


class FunctionCtx:
    """The ``ctx`` passed to ``forward``/``backward``: stash tensors and flags for backward."""

    def __init__(self) -> None:
        self.to_save: tuple[Any, ...] = ()
        self._saved: list[Any] | None = None
        self._non_differentiable: set[Any] = set()
        self._dirty: set[Any] = set()
        self.materialize_grads = True
        self.needs_input_grad: tuple[Any, ...] = ()
        self._node_ref: Callable[[], "FunctionNode | None"] = lambda: None

    @property
    def _node(self) -> "FunctionNode | None":
        """The Function's node, held weakly (the node holds this ctx: no reference cycle, so a
        graph is freed when its last tensor goes, without waiting for the garbage collector)."""
        return self._node_ref()

    @_node.setter
    def _node(self, node: "FunctionNode") -> None:
        self._node_ref = weakref.ref(node)

    def save_for_backward(self, *tensors: Any) -> None:
        """Save tensors (inputs or outputs) for ``backward``; read them back with ``ctx.saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Save tensors for ``jvp`` (forward AD); there ``ctx.saved_tensors`` reads them."""
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if getattr(self, "_in_jvp", False) and hasattr(self, "saved_for_forward"):
            return tuple(self.saved_for_forward)
        if self._saved is None:
            return tuple(self.to_save)
        owner = self._node
        return tuple(None if s is None else s.unpack(owner if s._is_output else None, numpy_box=False)
                     for s in self._saved)

    saved_variables = saved_tensors

    def mark_dirty(self, *args: Any) -> None:
        """Declare inputs that ``forward`` modified in place (they must be returned). Their history
        becomes this Function's node; for a view, its base's history is rewritten too (``CopySlices``),
        so the base's gradient flows through ``backward`` (the Function must then return one tensor)."""
        self._dirty = {id(a) for a in args}

    def mark_non_differentiable(self, *args: Any) -> None:
        """Declare outputs that get no gradient (e.g. indices); they do not require grad."""
        self._non_differentiable = {id(a) for a in args}

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = bool(value)


class FunctionNode(Node):
    """The graph node of one ``Function.apply`` call, named ``<Class>Backward``."""

    _in_meta: list[Any]  # (shape, dtype) of each tensor input, set by Function.apply
    _runs_on_undefined = True  # backward sees None (or zeros) for every output, as in PyTorch

    def __init__(self, cls: type, ctx: FunctionCtx, edges: list[Any], positions: list[Any], n_args: int):
        super().__init__(positions, edges)
        self._cls = cls
        self._name = f"{cls.__name__}Backward"
        if type(self) is FunctionNode:
            self.__class__ = named_node_class(FunctionNode, self._name)
        self._ctx = ctx
        self._n_args = n_args

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_saved_") or name.startswith("_raw_saved_"):
            raise AttributeError(name)
        # torch lets you read ctx attributes off the node (e.g. y.grad_fn.saved_tensors)
        ctx = self.__dict__.get("_ctx")
        if ctx is not None and hasattr(ctx, name):
            return getattr(ctx, name)
        raise AttributeError(f"'{self._name}' object has no attribute '{name}'")

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        from .backward import _from_user, _to_user
        from .creation import zeros

        if self._released and self._ctx._saved:
            raise RuntimeError(_FREED)
        ctx = self._ctx
        # no gradient: zeros, unless not materialize_grads (and None for non-tensor outputs, as in PyTorch)
        user = [_to_user(g, create_graph) if g is not None
                else zeros(meta[0], dtype=meta[1]) if ctx.materialize_grads and meta[1] is not None else None
                for g, meta in zip(grads, self._out_meta)]
        backward = _backward_of(self._cls)
        with set_grad_enabled(create_graph):
            res = _gradients(backward(ctx, *user), self._n_args, self._name)
        out: list[Any] = []
        in_meta = dict(zip(self._inputs, self._in_meta))
        for pos in self.argnums:
            g = res[pos]
            if g is None:
                out.append(None)
                continue
            if isinstance(g, GraphBox) and not isinstance(g, Tensor):
                g = _boxes.as_tensor_box(g)
            _check_returned(g, pos, f"function {self._name}", "gradient of type ")
            check_gradient_shape(tuple(g.shape), tuple(in_meta[pos][0]),
                                 f"Function {self._name} returned an invalid gradient at index {pos}")
            out.append(_from_user(g, create_graph))
        return out

    def release(self) -> None:
        self._released = True
        for s in self._ctx._saved or ():
            if s is not None:
                s.release()


def _gradients(returned: Any, n: int, name: str) -> tuple[Any, ...]:
    """What ``backward`` returned, as one gradient per ``forward`` argument (extra trailing Nones are dropped)."""
    res: tuple[Any, ...] = returned if isinstance(returned, tuple) else (returned,)
    if len(res) > n and all(r is None for r in res[n:]):
        res = res[:n]
    if len(res) != n:
        raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n}, got {len(res)})")
    return res


def check_gradient_shape(got: tuple[Any, ...], shape: tuple[Any, ...], what: str) -> None:
    """A gradient returned for an input of ``shape`` must have that shape, or be one element (it broadcasts)."""
    if got == shape:
        return
    try:
        ok = np.broadcast_shapes(got, shape) == shape and math.prod(got) == 1
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"{what} - got [{', '.join(map(str, got))}] but expected shape compatible with "
                           f"[{', '.join(map(str, shape))}]")


def _mark_output_views(outs: list[Any], results: list[Any], input_ids: dict[Any, Any], ctx: FunctionCtx) -> None:
    """Outputs that are views (or inputs returned as they are) refuse in-place changes later, and
    changes of their base, as in PyTorch: view+inplace history would bypass the custom backward."""
    views = [k for k, o in enumerate(results) if isinstance(o, Tensor) and id(outs[k]) not in ctx._dirty
             and (outs[k]._base is not None or id(outs[k]) in input_ids)]
    for k in views:
        o, src = results[k], outs[k]
        if o is not src or o._base is None:  # an alias made above: a view of what ``src`` views
            o._base = src._base if src._base is not None else src
            o._view_fns = src._view_fns or ()
        o._view_version = o._version_counter[0]
        o._view_kind = "multi_output" if len(views) > 1 else "custom_function"


def _rebase_dirty(o: Tensor, node: "FunctionNode", k: int, n_outputs: int) -> None:
    """A dirty output (modified in place by forward) gets the Function's node as its history; a
    dirty view rewrites its base's history too (``CopySlices``), as an in-place op on a view does."""
    if o._base is None:
        old = o._node, o._output_nr
        o._node, o._output_nr, o._requires_grad = node, k, True
        _boxes.move_retain(o, *old)
        return
    if n_outputs > 1:
        raise RuntimeError(
            "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot "
            "return more than one Tensor. This is not supported by the current autograd engine. You should either "
            "make sure the input is not a view (using .clone() for example) or make your Function only return one "
            "Tensor (potentially splitting it into two Functions: one doing the inplace that returns a single "
            "Tensor and a second one that does the other operations)."
        )
    _inplace.rebase_view(o, (node, k))


def _check_dirty(a: Tensor, recording: bool) -> None:
    """The checks of an in-place op, for an input that forward modified (``ctx.mark_dirty``)."""
    if not _mode.enabled:
        return
    if a._base is None:
        if a._node is None and a._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    elif recording or a._base._requires_grad:
        if a._view_kind is not None:
            raise RuntimeError(view_rebase_error(a, indirect=False))
        if a._base._node is None and a._base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def _backward_of(cls: type) -> Callable[..., Any]:
    """The user's ``backward``, or ``vjp`` (its alias); defining both is an error, as in PyTorch."""
    has_backward = cls.backward is not Function.backward  # type: ignore[attr-defined]
    has_vjp = cls.vjp is not Function.vjp  # type: ignore[attr-defined]
    if has_backward and has_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return cast("Callable[..., Any]", cls.vjp if has_vjp else cls.backward)  # type: ignore[attr-defined]


def _require_jvp(cls: type, why: str) -> None:
    """An error when the Function has no ``jvp`` (``why``: how forward mode reached it)."""
    jvp = getattr(cls, "jvp", None)
    if jvp is Function.jvp or not callable(jvp):
        raise NotImplementedError(f"You must implement the jvp function for custom autograd.Function to use it with "
                                  f"forward mode AD ({cls.__name__} {why}): define a static jvp(ctx, *grad_inputs)")


def _run_jvp(cls: type, ctx: FunctionCtx, tangents: list[Any], n_outputs: int) -> tuple[Any, ...]:
    """``cls.jvp(ctx, *tangents)`` (where ``ctx.saved_tensors`` reads what ``save_for_forward`` saved):
    one tangent per output of forward."""
    ctx._in_jvp = True  # type: ignore[attr-defined]
    try:
        t_out = cls.jvp(ctx, *tangents)  # type: ignore[attr-defined]
    finally:
        ctx._in_jvp = False  # type: ignore[attr-defined]
    if not isinstance(t_out, tuple):
        t_out = (t_out,)
    if len(t_out) != n_outputs:
        raise RuntimeError(f"Function {cls.__name__}.jvp returned {len(t_out)} tangents; expected one per output of "
                           f"forward ({n_outputs})")
    return tuple(t_out)


def _check_returned(t: Any, k: int, who: str, kind: str = "") -> None:
    """What ``who`` (a backward, ``kind`` "gradient of type ", or a jvp) returned at index ``k`` must be a Tensor."""
    if not isinstance(t, Tensor):
        raise RuntimeError(f"{who} returned a {kind}{type(t).__name__} at index {k}; expected a Tensor or None "
                           f"(PyTorch: expected Variable or None (got {type(t).__name__}))")


class Function:
    """Base class of custom differentiable operations (PyTorch's ``torch.autograd.Function``).

    Subclasses define static ``forward(ctx, *args)`` and ``backward(ctx,
    *grad_outputs)`` (one gradient per forward argument, None for
    non-tensors), or ``forward(*args)`` plus ``setup_context(ctx, inputs,
    output)``; call with ``MyFn.apply(*args)``. ``forward`` runs without
    recording. Complex gradients follow PyTorch's convention.
    """

    _backward_cls: type  # the class of this Function's graph nodes (``type(y.grad_fn)``), as in PyTorch

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = named_node_class(FunctionNode, f"{cls.__name__}Backward")

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html"
            "#torch.autograd.Function)"
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes positional arguments only")
        if any(isinstance(a, Tensor) and is_traced(a._value) for a in args):
            return _TRACED_APPLY[0](cls, args)  # under ft.func: one primitive whose rules are this Function's
        dual, dual_boxes = _fwad.dual_inputs(args)
        if dual is not None:  # forward AD: forward runs on the primals, cls.jvp gives the tangents
            args = _fwad.primal_args(args, dual_boxes)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)  # (views refreshed)
        record = _mode.enabled and any(ctx.needs_input_grad)
        if record:
            for a in args:  # as PyTorch reads every input's grad_fn before forward: stale views refresh (or raise)
                if isinstance(a, Tensor) and a._base is not None:
                    a._graph()
        uses_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            output = cls.forward(*args) if uses_setup else cls.forward(ctx, *args)
        if uses_setup:
            cls.setup_context(ctx, args, output)
        is_tuple = isinstance(output, tuple)
        outs = list(output) if is_tuple else [output]
        input_ids = {id(a): a for a in args if isinstance(a, Tensor)}
        results = []
        for o in outs:
            if isinstance(o, Tensor) and id(o) not in ctx._dirty and (id(o) in input_ids or o._node is not None):
                o = Tensor._make(o._value, vc=o._version_counter)  # an input or a recorded result: a new tensor (an alias)
            elif isinstance(o, GraphBox) and not isinstance(o, Tensor):
                o = _boxes.as_tensor_box(o)
            results.append(o)
        _mark_output_views(outs, results, input_ids, ctx)
        if ctx._dirty and not set(ctx._dirty) <= {id(o) for o in outs}:
            raise RuntimeError(DIRTY_NOT_RETURNED)
        if not set(ctx._dirty) <= set(input_ids):
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have "
                          "been mutated should be passed to ctx.mark_dirty().", UserWarning, stacklevel=2)
        for a in args:
            if isinstance(a, Tensor) and id(a) in ctx._dirty:
                _check_dirty(a, record)
        if record:
            tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
            edges = [edge_of(a) if a._requires_grad else None for _, a in tensors]
            node = FunctionNode(cls, ctx, edges, [i for i, _ in tensors], len(args))
            node._in_meta = [(a._value.shape, a._value.dtype) for _, a in tensors]
            ctx._node = node
            node._out_meta = node.ans = tuple((o._value.shape, o._value.dtype, namespace_of(o._value))
                                              if isinstance(o, Tensor) else ((), None, None) for o in results)
            node._n_outputs = len(results)
            for k, o in enumerate(results):
                if (not isinstance(o, Tensor) or id(outs[k]) in ctx._non_differentiable
                        or o._value.dtype.kind not in "fc"):
                    continue
                if id(outs[k]) in ctx._dirty:
                    _rebase_dirty(o, node, k, len(results))
                else:
                    o._node, o._output_nr, o._requires_grad = node, k, True
            if anomaly.enabled:
                node._stack = user_stack()
            # saved tensors: outputs saved as outputs (no reference cycle), others as inputs
            out_pos = {id(o): k for k, o in enumerate(outs) if isinstance(o, Tensor)}
            ctx._saved = [None if t is None else _saved.save(t) if id(t) not in out_pos else
                          _saved.save(results[out_pos[id(t)]], is_output=True, output_nr=out_pos[id(t)], owner=node)
                          for t in ctx.to_save]
            ctx.to_save = ()
        if dual is not None:
            _attach_tangents(cls, ctx, dual, args, dual_boxes, results)
        return tuple(results) if is_tuple else results[0]

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """The output tangents from the input tangents (forward AD, ``ft.autograd.forward_ad``)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def vmap(cls, *args: Any) -> Any:
        raise NotImplementedError("vmap of custom Functions is not supported by funcgrad.tensor")


InplaceFunction = Function
NestedIOFunction = Function


class _DelayedError(Node):
    _name = "DelayedError"

    def __init__(self, message: str, edges: list[Any], metas: list[Any]):
        super().__init__(range(len(edges)), edges)
        self._message = message
        self._out_meta = self.ans = tuple(metas)
        self._n_outputs = len(metas)

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        raise RuntimeError(self._message)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a ``backward`` that is not itself differentiable: it runs without recording,
    and differentiating its result again (create_graph) raises a clear error.
    """

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        edges = [edge_of(a) for a in args if isinstance(a, Tensor) and a._requires_grad] if _mode.enabled else []
        if not edges:
            return outputs
        res = []
        for o in outputs if isinstance(outputs, tuple) else (outputs,):
            if isinstance(o, Tensor):
                meta = (o._value.shape, o._value.dtype, namespace_of(o._value))
                err = _DelayedError("trying to differentiate twice a function that was marked with "
                                    "@once_differentiable", edges, [meta])
                o = Tensor._make(o._value, err, 0, True)
            res.append(o)
        return tuple(res) if isinstance(outputs, tuple) else res[0]

    return wrapper


def _attach_tangents(cls: Any, ctx: Any, trace: Any, args: tuple[Any, ...], boxes: list[Any],
                    results: list[Any]) -> None:
    """Run ``cls.jvp(ctx, *input_tangents)`` and make the tensor outputs in ``results`` dual at ``trace``."""
    from .creation import zeros_like

    _require_jvp(cls, "was given a dual tensor")

    # as PyTorch: zeros for floating tensor inputs without a tangent, None for everything else
    t_in = [Tensor._make(b._tangent) if b is not None and b._tangent is not None
            else zeros_like(a) if isinstance(a, Tensor) and (a.is_floating_point() or a.is_complex()) else None
            for a, b in zip(args, boxes)]
    t_out = _run_jvp(cls, ctx, t_in, len(results))
    for k, (o, t) in enumerate(zip(results, t_out)):
        if not isinstance(o, Tensor) or t is None or not (o.is_floating_point() or o.is_complex()):
            continue
        _check_returned(t, k, f"Function {cls.__name__}.jvp")
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(f"Function {cls.__name__}.jvp returned a tangent of shape {list(t.shape)} at index "
                               f"{k}, but the output has shape {list(o.shape)}")
        if t.dtype != o.dtype:
            t = t.to(o.dtype)
        o._value = JVPBox(o._value, trace, t._value)
