"""Recording: the tensor trace, graph nodes (``grad_fn``), saved tensors and their hooks.

Tensors are boxes of one process-wide trace, :data:`TRACE`, whose level (0)
is below every functional transform's, and which is never closed. So every
``funcgrad.numpy`` primitive called on a Tensor lands in :func:`record`:

1. the raw arrays are computed by the primitive's raw function;
2. if grad mode is on and some input requires grad, a :class:`PrimNode` is
   made. It keeps what the primitive's VJP rules read, and only that (the
   primitive's declared ``reads``; everything else is kept as shape and
   dtype only), each as a :class:`SavedTensor` that checks version counters
   and applies saved-tensor hooks;
3. views (reshape, transpose, basic indexing ...) share their base's
   version counter and remember how to replay themselves on the base, so
   that an in-place change through a view can rebase the graph
   (:func:`apply_inplace`, the ``CopySlices`` node).

Backward (``backward.py``) walks these nodes. Rules run on raw arrays (the
fast path) or, for ``create_graph=True``, on recorded boxes, so that the
backward pass is itself recorded.
"""

from __future__ import annotations

import itertools
import re
import threading
import traceback
import weakref
from typing import Any, Callable, TypeVar

import numpy as np

from ..backend import namespace_of
from ..core import Box, Primitive, Trace, get_primitive
from ..core.reverse import dropped
from . import dtypes as _dt
from . import forward_ad as _fwad
from .grad_mode import state as _mode

__all__ = [
    "TRACE", "GraphBox", "NumpyBox", "Node", "PrimNode", "AccumulateGrad", "SavedTensor",
    "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "RemovableHandle",
    "apply_inplace", "edge_of", "get_gradient_edge",
]


try:  # NumPy >= 2: set the floating-point error state directly (~0.3 us; np.errstate costs ~2 us)
    from numpy._core._ufunc_config import _extobj_contextvar  # type: ignore[attr-defined]
    from numpy._core.umath import _make_extobj

    _QUIET = _make_extobj(all="ignore")

    def fp_quiet() -> Any:
        """Silence NumPy's floating-point warnings (0/0, log(0), overflow) until :func:`fp_restore`:
        tensor ops return inf/nan as PyTorch does, without a RuntimeWarning."""
        return _extobj_contextvar.set(_QUIET)

    def fp_restore(token: Any) -> None:
        _extobj_contextvar.reset(token)
except ImportError:  # pragma: no cover - older NumPy
    def fp_quiet() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def fp_restore(token: Any) -> None:
        token.__exit__(None, None, None)


class TensorTrace(Trace):
    """The trace that Tensors belong to: level 0, always open, never on any thread's stack."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("funcgrad.tensor", level=0)  # below every transform (their levels count from 1)
        self.active = True

    def __enter__(self) -> "TensorTrace":
        raise RuntimeError("the tensor trace is always open; it is not entered")

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
        hook = FUNC_OPS[0]
        if hook is not None:  # ft.func is running a function: see _func_support (views, no_grad of traced values)
            return hook(record, prim, args, kwargs, argnums)
        return record(prim, args, kwargs, argnums)


TRACE = TensorTrace()
# Set by funcgrad.tensor._func_support while an ft.func transform runs a function, else None.
FUNC_OPS: list[Any] = [None]

# --------------------------------------------------------------------------
# boxes


_new = object.__new__
_B = TypeVar("_B", bound="GraphBox")


class GraphBox(Box):
    """A recorded value: the array, the node that made it, a version counter.

    ``Tensor`` (the user's object, PyTorch methods) and ``NumpyBox`` (NumPy
    methods, what derivative rules see in create_graph mode) both derive from it.
    """

    # ``_node`` is the Box slot; these are the Tensor layer's own.
    __slots__ = ("_output_nr", "_requires_grad", "_vc", "_base", "_view_fns", "_view_version", "_inference")
    _node: Any  # this layer's graph.Node (core's Box declares a VJPNode)
    _output_nr: int
    _requires_grad: bool
    _vc: list[int]  # the version counter, shared by a tensor and its views
    _base: Any  # the tensor this one is a view of, or None
    _view_fns: Any
    _view_version: int
    _inference: bool
    # How a view was made, when that restricts in-place changes (PyTorch's CreationMeta):
    # None, or one of _VIEW_FIX's keys; set only on Tensors (in their __dict__).
    _view_kind: str | None = None

    # The functional in-place machinery (funcgrad.numpy.inplace) tracks views of
    # boxes through ``_view``/``_version``; tensors track views themselves (real
    # memory sharing), so ``_view`` is always None here and ``_version`` is the
    # shared version counter.
    @property
    def _view(self) -> None:
        return None

    @_view.setter
    def _view(self, value: Any) -> None:
        pass

    @property
    def _version(self) -> int:
        return self._vc[0]

    @_version.setter
    def _version(self, value: int) -> None:
        self._vc[0] = value

    @classmethod
    def _make(cls: type[_B], value: Any, node: Any = None, output_nr: int = 0, requires_grad: bool = False,
              vc: list[Any] | None = None, inference: bool = False) -> _B:
        b: _B = _new(cls)
        b._value = value
        b._trace = TRACE
        b._node = node
        b._output_nr = output_nr
        b._requires_grad = requires_grad
        b._vc = [0] if vc is None else vc
        b._base = None
        b._view_fns = None
        b._view_version = 0
        b._inference = inference
        if cls._extra_init is not None:
            cls._extra_init(b)
        return b

    _extra_init: Callable[..., Any] | None = None

    def _graph(self) -> tuple[Any, ...]:
        """(node, output_nr) of this value for recording; refreshes a stale view first."""
        if self._base is not None and self._view_version != self._vc[0]:
            _refresh_view(self)
        return self._node, self._output_nr


class NumpyBox(GraphBox):
    """A recorded value with NumPy's methods (from funcgrad.numpy's Box methods).

    Derivative rules are written for NumPy semantics; in create_graph mode they
    run on these, never on Tensors (whose methods follow PyTorch). In-place
    writes rebind the box to a functional update of itself.
    """

    __slots__ = ()

    def _assign(self, new: Any) -> None:
        if not isinstance(new, GraphBox):
            new = NumpyBox._make(_as_array(new))
        for slot in ("_value", "_node", "_output_nr", "_requires_grad", "_vc", "_base", "_view_fns",
                     "_view_version", "_inference"):
            setattr(self, slot, getattr(new, slot))

    def __setitem__(self, idx: Any, value: Any) -> None:
        import funcgrad.numpy as fnp

        self._assign(fnp.at(self)[idx].set(value))


def _numpy_box_inplace(op_name: str) -> Callable[..., Any]:
    def inplace(self: NumpyBox, other: Any) -> NumpyBox:
        import funcgrad.numpy as fnp

        self._assign(getattr(fnp, op_name)(self, other))
        return self

    return inplace


for _iname, _op in (("__iadd__", "add"), ("__isub__", "subtract"), ("__imul__", "multiply"),
                    ("__itruediv__", "divide"), ("__ipow__", "power"), ("__imatmul__", "matmul")):
    setattr(NumpyBox, _iname, _numpy_box_inplace(_op))


_TENSOR_CLS: list[Any] = []  # filled by tensor.py: [Tensor]


def as_numpy_box(b: Any) -> Any:
    """The same recorded value as a NumpyBox (sharing node and version counter)."""
    if not isinstance(b, GraphBox) or type(b) is NumpyBox:
        return b
    if b._base is not None and b._view_version != b._vc[0]:
        _refresh_view(b)
    n = NumpyBox._make(b._value, b._node, b._output_nr, b._requires_grad, b._vc, b._inference)
    if b._node is None and b._requires_grad:  # a leaf: gradients go to its accumulator
        n._node = get_accumulator(b)
    return n


def as_tensor_box(b: Any) -> Any:
    """The same recorded value as a Tensor (used where user code sees it: hooks, Functions)."""
    T = _TENSOR_CLS[0]
    if isinstance(b, T):
        return b
    if isinstance(b, GraphBox):
        if isinstance(b._node, AccumulateGrad):
            return b._node.variable  # a leaf travelling through rules: hand back the leaf
        return T._make(b._value, b._node, b._output_nr, b._requires_grad, b._vc, b._inference)
    return T._make(b)


def edge_of(b: GraphBox) -> tuple[Any, ...] | None:
    """Where gradients of ``b`` go: (node, output_nr), the accumulator of a leaf, or None."""
    if not b._requires_grad:
        return None
    node, nr = b._graph()
    if node is None:
        return (get_accumulator(b), 0)
    return (node, nr)


def get_gradient_edge(t: Any) -> tuple[Any, ...]:
    """PyTorch's ``torch.autograd.graph.get_gradient_edge``: (node, output_nr) of a tensor."""
    e = edge_of(t)
    if e is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    return e


def get_accumulator(t: Any) -> "AccumulateGrad":
    """The leaf's AccumulateGrad node (one per leaf; the leaf owns it, it refers back weakly)."""
    acc = getattr(t, "_accumulator", None)
    if acc is None:
        acc = AccumulateGrad(t)
        if isinstance(t, _TENSOR_CLS[0]):
            t._accumulator = acc
    return acc


# --------------------------------------------------------------------------
# nodes

_seq = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``handle.remove()`` takes the hook off."""

    __slots__ = ("_container", "_key")

    def __init__(self, container: dict[Any, Any], key: int):
        self._container = container
        self._key = key

    def remove(self) -> None:
        self._container.pop(self._key, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


_hook_ids = itertools.count()


def _add_hook(container: dict[Any, Any], fn: Callable[..., Any]) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    key = next(_hook_ids)
    container[key] = fn
    return RemovableHandle(container, key)


class Node:
    """A node of the backward graph (``tensor.grad_fn``), like ``torch.autograd.graph.Node``.

    ``name()``, ``next_functions`` (one ``(node, output_nr)`` pair per
    differentiable input, ``(None, 0)`` for inputs that need no gradient),
    ``metadata``, ``register_hook(fn(grad_inputs, grad_outputs))`` and
    ``register_prehook(fn(grad_outputs))``.
    """

    _name = "Node"
    # defaults at class level: a node only stores what it changes (cheap to create)
    _hooks: dict[Any, Any] | None = None
    _prehooks: dict[Any, Any] | None = None
    _tensor_prehooks: dict[Any, Any] | None = None  # output_nr -> {id: hook}: hooks of non-leaf tensors
    _retain: dict[Any, Any] | None = None  # output_nr -> weakref to a tensor with retain_grad()
    _stack: Any = None  # forward traceback, in anomaly mode
    _metadata: dict[Any, Any] | None = None
    _n_outputs = 1
    _out_meta: tuple[Any, ...] = ()

    def __init__(self) -> None:
        self._edges: list[Any] = []
        self._seq = next(_seq)

    def name(self) -> str:
        return self._name

    @property
    def next_functions(self) -> tuple[Any, ...]:
        return tuple(e if e is not None else (None, 0) for e in self._edges)

    @property
    def metadata(self) -> dict[Any, Any]:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        return _add_hook(self._hooks, fn)

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._prehooks is None:
            self._prehooks = {}
        return _add_hook(self._prehooks, fn)

    def _tensor_hook(self, output_nr: int, fn: Callable[..., Any]) -> RemovableHandle:
        if self._tensor_prehooks is None:
            self._tensor_prehooks = {}
        return _add_hook(self._tensor_prehooks.setdefault(output_nr, {}), fn)

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        raise NotImplementedError

    def release(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{self._name} object at {id(self):#x}>"

    def __call__(self, *grads: Any) -> Any:
        from .backward import call_node

        return call_node(self, grads)


class _Meta:
    """Shape and dtype of an input a rule does not read; becomes a stand-in array if asked."""

    __slots__ = ("shape", "dtype", "ns")

    def __init__(self, value: Any):
        self.shape = value.shape
        self.dtype = value.dtype
        self.ns = np if type(value) is np.ndarray else namespace_of(value)

    def materialize(self) -> Any:
        key = (self.shape, self.dtype, self.ns)
        got = _META_CACHE.get(key)
        if got is None:
            if len(_META_CACHE) > 512:
                _META_CACHE.clear()
            ns = self.ns
            got = _META_CACHE[key] = ns.broadcast_to(ns.zeros((), dtype=self.dtype), self.shape)  # read-only
        return got


_META_CACHE: dict[Any, Any] = {}


class _HookState(threading.local):
    stack: list[Any] = []
    disabled: str | None = None


_hook_state = _HookState()


def _current_hooks() -> tuple[Any, ...] | None:
    stack = _hook_state.stack
    return stack[-1] if stack else None


_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


def _type_desc(value: Any) -> str:
    d: Any = _dt._BY_NP.get(np.dtype(value.dtype))
    tname = _dt.TYPE_NAMES.get(d, str(value.dtype))
    return f"[ft.{tname} [{', '.join(str(s) for s in value.shape)}]]"


class SavedTensor:
    """One tensor a node saved for backward (``grad_fn._raw_saved_self``).

    Keeps the array, the edge to re-attach in create_graph mode, and the
    version of the tensor when it was saved: a later in-place change makes
    backward raise PyTorch's "modified by an inplace operation" error.
    ``register_hooks(pack, unpack)`` moves the value out (pack) and back (unpack).
    """

    __slots__ = ("_data", "_box", "_edge", "_requires_grad", "_vc", "_version", "_is_output", "_output_nr",
                 "_packed", "_unpack", "_released", "_desc", "__weakref__")
    _edge: Any  # (node, output_nr) of the saved value, or None
    _unpack: Callable[..., Any] | None
    _desc: tuple[Any, ...] | None

    def __init__(self, box: GraphBox, is_output: bool = False, output_nr: int = 0, owner: Node | None = None):
        self._data = box._value
        self._vc = box._vc
        self._version = box._vc[0]
        self._is_output = is_output
        self._output_nr = output_nr
        self._requires_grad = box._requires_grad
        self._released = False
        self._packed = None
        self._unpack = None
        if is_output:
            self._box = None
            self._edge = None  # the owner node, given at unpack time
            self._desc = (owner._name, output_nr) if owner is not None else None
        else:
            self._box = box
            node = box._node
            self._edge = None
            self._desc = (node._name, box._output_nr) if node is not None and not isinstance(node, AccumulateGrad) else None
        hooks = _current_hooks()
        if hooks is not None:
            self._pack_now(box, *hooks)

    def _pack_now(self, box: Any, pack: Callable[..., Any], unpack: Callable[..., Any]) -> None:
        if not self._is_output and box._requires_grad:
            self._edge = edge_of(box)
        t = as_tensor_box(box) if isinstance(box, GraphBox) else _TENSOR_CLS[0]._make(self._data)
        self._packed = pack(t)
        self._unpack = unpack
        self._data = None
        self._box = None

    def register_hooks(self, pack_hook: Callable[..., Any], unpack_hook: Callable[..., Any]) -> None:
        """Pack the saved value now with ``pack_hook``; ``unpack_hook`` brings it back in backward."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(pack_hook, unpack_hook): both hooks must be callable")
        if self._unpack is not None:
            raise RuntimeError("SavedTensor hooks have already been set")
        if self._released:
            raise RuntimeError(_FREED)
        box = self._box if self._box is not None else _TENSOR_CLS[0]._make(self._data, vc=self._vc)
        self._pack_now(box, pack_hook, unpack_hook)

    def _detach_copy(self) -> None:
        """Keep a private copy of the value (an in-place op is about to overwrite it)."""
        if self._unpack is not None or self._data is None:
            return
        if self._box is not None and self._box._requires_grad:
            self._edge = edge_of(self._box)
        self._box = None
        self._data = namespace_of(self._data).array(self._data, copy=True)
        self._vc = [0]
        self._version = 0

    def _check_version(self, owner: Node | None) -> None:
        if self._vc[0] != self._version:
            # PyTorch names the node that made a saved result, and the current history of a saved
            # input (what changed it in place), without the "Backward<N>" suffix
            box = self._box
            if self._is_output and owner is not None:
                where = f", which is output {self._output_nr} of {_short_name(owner)},"
            elif box is not None and box._node is not None and not isinstance(box._node, AccumulateGrad):
                where = f", which is output {box._output_nr} of {_short_name(box._node)},"
            elif self._desc is not None:
                where = f", which is output {self._desc[1]} of {_strip_backward(self._desc[0])},"
            else:
                where = ""
            value = self._data if self._data is not None else None
            desc = _type_desc(value) if value is not None else "[a saved tensor]"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {desc}{where} is at version {self._vc[0]}; expected version "
                f"{self._version} instead. Hint: enable anomaly detection to find the operation that "
                f"failed to compute its gradient, with ft.autograd.set_detect_anomaly(True, check_nan=False)."
            )

    def unpack_raw(self, owner: Node | None = None) -> Any:
        if self._released:
            raise RuntimeError(_FREED)
        if self._unpack is not None:
            t = self._unpack(self._packed)
            if not isinstance(t, GraphBox):
                raise TypeError(
                    f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                    f"{type(t).__name__}"
                )
            self._check_version(owner)
            return t._value
        self._check_version(owner)
        return self._data

    def unpack(self, owner: Node | None = None, numpy_box: bool = True) -> Any:
        """The saved value as a recorded box carrying its graph (for create_graph and ``_saved_*``)."""
        if self._released:
            raise RuntimeError(_FREED)
        if self._unpack is None and self._box is not None:
            self._check_version(owner)
            return as_numpy_box(self._box) if numpy_box else self._box
        raw = self.unpack_raw(owner)
        cls = NumpyBox if numpy_box else _TENSOR_CLS[0]
        if self._is_output:
            if owner is None:
                return cls._make(raw)
            return cls._make(raw, owner, self._output_nr, True)
        if self._edge is not None:
            node, nr = self._edge
            if isinstance(node, AccumulateGrad) and not numpy_box:
                return node.variable if self._unpack is None else cls._make(raw, node, nr, True)
            return cls._make(raw, node, nr, True)
        return cls._make(raw)

    def release(self) -> None:
        self._released = True
        self._data = self._box = self._packed = None


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients to ``variable.grad``."""

    _name = "torch::autograd::AccumulateGrad"  # what PyTorch's name() returns
    _short = "AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"

    def __init__(self, variable: Any):
        super().__init__()
        self._variable = weakref.ref(variable)
        v = variable._value
        self._out_meta = ((v.shape, v.dtype, namespace_of(v)),)

    @property
    def variable(self) -> Any:
        """The leaf tensor (None once it has been garbage-collected)."""
        return self._variable()


_NAMED_CLASSES: dict[Any, Any] = {}


def named_node_class(base: type, name: str) -> type:
    """A subclass of ``base`` called ``name``, so that ``type(grad_fn).__name__`` is PyTorch's
    node name (``MulBackward0``, ``<Function>Backward``); one class per name, cached."""
    cls = _NAMED_CLASSES.get((base, name))
    if cls is None:
        cls = _NAMED_CLASSES[(base, name)] = type(name, (base,), {"_named_base": base, "__module__": base.__module__})
    return cls


def rename_node(node: "Node", name: str) -> None:
    """Give ``node`` PyTorch's ``name`` (its ``name()`` and its class's name)."""
    node._name = name
    base = getattr(type(node), "_named_base", None)
    if base is not None:
        node.__class__ = named_node_class(base, name)


class PrimNode(Node):
    """A recorded call of a funcgrad primitive; its backward runs the primitive's VJP rules."""

    def __init__(self, prim: Primitive, name: str, args: list[Any], kwargs: dict[Any, Any], positions: list[Any],
                 edges: list[Any]):
        super().__init__()
        self._name = name
        self._prim = prim
        self._args = args  # per positional argument: SavedTensor, _Meta or a constant
        self._kwargs = kwargs
        self._positions = positions  # positional index of each edge (the core's argnums list)
        self._edges = edges
        self._ans: list[Any] = []  # per output: SavedTensor, _Meta
        self._released = False
        self._has_saved = False

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        if self._released and self._has_saved:
            raise RuntimeError(_FREED)
        prim = self._prim
        if prim.multiple_results:
            g = tuple(gk if gk is not None else _zeros(m) for gk, m in zip(grads, self._out_meta))
        else:
            g = grads[0]
        ans: Any
        if create_graph:
            args = [a.unpack(self) if type(a) is SavedTensor else a.materialize() if type(a) is _Meta else a
                    for a in self._args]
            ans = [a.unpack(self) if type(a) is SavedTensor else a.materialize() for a in self._ans]
        else:
            args = [a.unpack_raw(self) if type(a) is SavedTensor else a.materialize() if type(a) is _Meta else a
                    for a in self._args]
            ans = [a.unpack_raw(self) if type(a) is SavedTensor else a.materialize() for a in self._ans]
        kwargs = self._kwargs
        if prim.vjp_all is not None:
            ans = tuple(ans) if prim.multiple_results else ans[0]
            gg = tuple(grads) if prim.multiple_results else grads[0]
            live = [pos for pos, edge in zip(self._positions, self._edges) if edge is not None]
            cts = iter(prim.vjp_all(gg, ans, tuple(live), *args, **kwargs))
            return [None if edge is None else next(cts) for edge in self._edges]
        ans = tuple(ans) if prim.multiple_results else ans[0]
        out: list[Any] = []
        vjps = prim.vjps
        for pos, edge in zip(self._positions, self._edges):
            if edge is None:
                out.append(None)
                continue
            rule = vjps.get(pos)
            if rule is None:
                raise prim.missing_rule("VJP", pos)
            out.append(rule(g, ans, *args, **kwargs))
        return out

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        for a in self._args:
            if type(a) is SavedTensor:
                a.release()
        for a in self._ans:
            if type(a) is SavedTensor:
                a.release()

    def _saved_names(self) -> list[Any]:
        return _ARG_NAMES.get(self._prim.name, _DEFAULT_ARG_NAMES)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_raw_saved_") or name.startswith("_saved_"):
            raw = name.startswith("_raw_saved_")
            key = name[len("_raw_saved_"):] if raw else name[len("_saved_"):]
            entry = self._lookup_saved(key)
            if entry is not None:
                if type(entry) is SavedTensor:
                    if raw:
                        return entry
                    if self._released:
                        raise RuntimeError(_FREED)
                    return entry.unpack(self, numpy_box=False)
                if not raw:
                    return entry
        raise AttributeError(f"'{self._name}' object has no attribute '{name}'")

    def _lookup_saved(self, key: str) -> Any:
        if key == "result":
            if len(self._ans) == 1 and type(self._ans[0]) is SavedTensor:
                return self._ans[0]
            return None
        if key.startswith("result") and key[6:].isdigit():
            k = int(key[6:])
            return self._ans[k] if k < len(self._ans) and type(self._ans[k]) is SavedTensor else None
        names = self._saved_names()
        for i, a in enumerate(self._args):
            nm = names[i] if i < len(names) else f"arg{i}"
            if nm == key and type(a) is not _Meta:
                return a
        if key in self._kwargs:
            return self._kwargs[key]
        return None

    def __dir__(self) -> list[Any]:
        names = self._saved_names()
        extra = []
        for i, a in enumerate(self._args):
            if type(a) is SavedTensor:
                nm = names[i] if i < len(names) else f"arg{i}"
                extra += [f"_saved_{nm}", f"_raw_saved_{nm}"]
        if any(type(a) is SavedTensor for a in self._ans):
            extra += ["_saved_result", "_raw_saved_result"]
        return sorted(set(list(super().__dir__()) + extra))


def _zeros(meta: tuple[Any, ...]) -> Any:
    shape, dtype, ns = meta
    return ns.zeros(shape, dtype=dtype)


class CopySlices(Node):
    """The new history of a base after an in-place change through one of its views.

    Gradient to the old base: the incoming gradient with the view's region
    zeroed; gradient to the new values of the region: the view of the gradient.
    """

    _name = "torch::autograd::CopySlices"  # what PyTorch's name() returns
    _short = "CopySlices"

    def __repr__(self) -> str:
        return f"<CopySlices object at {id(self):#x}>"

    def __init__(self, base_edge: tuple[Any, ...] | None, out_edge: tuple[Any, ...] | None, view_fns: tuple[Any, ...],
                 meta: tuple[Any, ...]):
        super().__init__()
        self._edges = [base_edge, out_edge]
        self._view_fns = view_fns
        self._out_meta = (meta,)

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        import funcgrad.numpy as fnp

        g = grads[0]
        out: list[Any] = [None, None]
        if self._edges[0] is not None:
            m = _overwritten(self._out_meta[0], self._view_fns)  # made here: the graph keeps no mask
            if m.dtype.kind == "c":  # a complex base: per component (a view may be its .real or .imag)
                out[0] = fnp.real(g) * (1 - m.real) + 1j * (fnp.imag(g) * (1 - m.imag))
            else:
                out[0] = fnp.where(m, 0, g)
        if self._edges[1] is not None:
            out[1] = _view_cotangent(g, self._view_fns, raw=not create_graph)
        return out


def _overwritten(meta: tuple[Any, ...], view_fns: tuple[Any, ...]) -> Any:
    """Where a base of ``meta`` (shape, dtype, namespace) is overwritten through the view
    ``view_fns``: a bool mask, or for a complex base a complex one (1 in each overwritten
    component, as ``.real``/``.imag`` views overwrite one)."""
    shape, dtype, ns = meta
    complex_base = np.dtype(dtype).kind == "c"
    mask = ns.zeros(shape, dtype=dtype if complex_base else bool)
    region = replay_view(mask, view_fns, raw=True)
    if type(region) is np.ndarray and not region.flags.writeable:
        region.flags.writeable = True  # NumPy's diagonal: read-only by convention only
    region[...] = (1 + 1j if region.dtype.kind == "c" else 1) if complex_base else True
    return mask


def _view_cotangent(g: Any, view_fns: tuple[Any, ...], raw: bool) -> Any:
    """The cotangent of a view, from its base's: the same view of it, except that ``imag``
    flips the sign (funcgrad's complex cotangents follow JAX: that of ``x + iy`` is
    ``ct_x - i ct_y``)."""
    for prim, rest, kwargs in view_fns:
        g = (prim.raw if raw else prim.call)(g, *rest, **kwargs)
        if prim.name == "imag":
            g = -g
    return g


# --------------------------------------------------------------------------
# PyTorch's names of saved values and of nodes (what a node saves is its primitive's ``reads``)

_DEFAULT_ARG_NAMES = ["self", "other"]
_ARG_NAMES: dict[str, list[Any]] = {
    "matmul": ["self", "other"], "power": ["self", "exponent"], "where": ["condition", "self", "other"],
    "clip": ["self", "min", "max"],
}

# prim name -> PyTorch node name (Tensor methods rename where PyTorch distinguishes more)
_NAMES = {
    "add": "AddBackward0", "subtract": "SubBackward0", "multiply": "MulBackward0", "divide": "DivBackward0",
    "true_divide": "DivBackward0", "negative": "NegBackward0", "positive": "AliasBackward0",
    "power": "PowBackward0", "exp": "ExpBackward0", "log": "LogBackward0", "sin": "SinBackward0",
    "cos": "CosBackward0", "tan": "TanBackward0", "tanh": "TanhBackward0", "sqrt": "SqrtBackward0",
    "square": "PowBackward0", "absolute": "AbsBackward0", "abs": "AbsBackward0", "sum": "SumBackward0",
    "mean": "MeanBackward0", "prod": "ProdBackward0", "max": "MaxBackward1", "min": "MinBackward1",
    "amax": "AmaxBackward0", "amin": "AminBackward0", "var": "VarBackward0", "std": "StdBackward0",
    "matmul": "MmBackward0", "dot": "DotBackward0", "reshape": "ViewBackward0", "transpose": "PermuteBackward0",
    "swapaxes": "TransposeBackward0", "moveaxis": "PermuteBackward0", "expand_dims": "UnsqueezeBackward0",
    "squeeze": "SqueezeBackward0", "broadcast_to": "ExpandBackward0", "getitem": "IndexBackward0",
    "_getitem": "IndexBackward0", "astype": "ToCopyBackward0", "copy": "CloneBackward0",
    "concatenate": "CatBackward0", "_concatenate": "CatBackward0", "stack": "StackBackward0",
    "_stack": "StackBackward0", "where": "WhereBackward0", "_where": "WhereBackward0", "clip": "ClampBackward1",
    "_clip": "ClampBackward1", "maximum": "MaximumBackward0", "minimum": "MinimumBackward0",
    "log1p": "Log1PBackward0", "expm1": "Expm1Backward0", "cumsum": "CumsumBackward0",
    "cumprod": "CumprodBackward0", "real": "RealBackward0", "imag": "ImagBackward0",
    "conjugate": "ConjBackward0", "diagonal": "DiagonalBackward0", "flip": "FlipBackward0",
    "tile": "RepeatBackward0", "take_along_axis": "GatherBackward0", "_take_along_axis": "GatherBackward0",
    "sinh": "SinhBackward0", "cosh": "CoshBackward0", "arctan": "AtanBackward0", "arcsin": "AsinBackward0",
    "arccos": "AcosBackward0", "arctan2": "Atan2Backward0", "reciprocal": "ReciprocalBackward0",
    "logsumexp": "LogsumexpBackward0", "expit": "SigmoidBackward0", "erf": "ErfBackward0",
    "sort": "SortBackward0", "einsum": "EinsumBackward0", "ravel": "ViewBackward0",
}


def torch_name(prim_name: str) -> str:
    got = _NAMES.get(prim_name)
    if got is None:
        got = "".join(p.capitalize() for p in prim_name.strip("_").split("_")) + "Backward0"
        _NAMES[prim_name] = got
    return got


# --------------------------------------------------------------------------
# views

_VIEW_PRIMS: set[Any] = set()


def _init_view_prims() -> None:
    import funcgrad.numpy as fnp

    for fn_name in ("reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze", "broadcast_to",
                    "diagonal", "real", "imag"):
        fn: Any = getattr(fnp, fn_name, None)
        try:
            _VIEW_PRIMS.add(get_primitive(fn).name)
        except TypeError:
            pass
    getitem: Any = getattr(getattr(fnp, "indexing", None), "_getitem", None)
    for fn in (getitem,):
        try:
            _VIEW_PRIMS.add(get_primitive(fn).name)
        except TypeError:
            pass
    _VIEW_PRIMS.update({"reshape", "transpose", "swapaxes", "expand_dims", "squeeze"})


def replay_view(x: Any, view_fns: tuple[Any, ...], raw: bool) -> Any:
    """Apply a recorded chain of view operations to ``x`` (a base-shaped array or box)."""
    for prim, rest, kwargs in view_fns:
        x = (prim.raw if raw else prim.call)(x, *rest, **kwargs)
    return x


def _refresh_view(b: GraphBox) -> None:
    """A view whose base changed in place re-derives its history from the base (PyTorch
    regenerates a stale view's ``grad_fn`` the same way). A view that may not follow its
    base (made in no-grad mode, by a custom Function, ...) raises instead; its
    ``retain_grad()`` moves to the new node, its hooks stay with the old one."""
    base = b._base
    if _fwad.is_dual(base._value) or _fwad.is_dual(b._value):  # forward AD: the tangent follows the base's
        b._value = replay_view(base._value, b._view_fns, raw=False)
    if b._view_kind is not None and (b._node is not None or base._requires_grad):
        if _mode.enabled:
            raise RuntimeError(view_rebase_error(b, indirect=True))
        return  # stays stale: a later use with grad mode on raises, as in PyTorch
    b._view_version = b._vc[0]
    old = b._node, b._output_nr
    if base._requires_grad:
        w = fresh_view(base, b._view_fns)
        if w._node is not base._node:
            rename_node(w._node, "AsStridedBackward0")
        b._node, b._output_nr, b._requires_grad = w._node, w._output_nr, True
    elif b._node is not None:
        b._node, b._requires_grad = None, False
    # (else: a view that was made a leaf with requires_grad_() stays one, as in PyTorch)
    move_retain(b, *old)


def fresh_view(base: GraphBox, view_fns: tuple[Any, ...]) -> Any:
    """Record ``view_fns`` afresh on ``base``'s current history (new nodes, no hooks)."""
    prev = _mode.enabled
    _mode.enabled = True
    try:
        return replay_view(as_numpy_box(base) if not isinstance(base, NumpyBox) else base, view_fns, raw=False)
    finally:
        _mode.enabled = prev


def move_retain(t: Any, old_node: Any, old_nr: int) -> None:
    """``t`` got a new node: its ``retain_grad()`` follows it there (tensor hooks stay with the
    old node, i.e. with the old version of ``t``, as in PyTorch)."""
    if not getattr(t, "_retains_grad", False) or old_node is None:
        return
    node = t._node
    retain = old_node._retain
    if retain is not None:
        ref = retain.get(old_nr)
        if ref is not None and ref() is t:
            del retain[old_nr]
    if node is None:
        t._retains_grad = False
        return
    if node._retain is None:
        node._retain = {}
    node._retain[t._output_nr] = weakref.ref(t)


_VIEW_FIX = {
    "no_grad": (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code "
                "by moving both the view and the inplace either both inside the no_grad block (if you don't want the "
                "inplace to be tracked) or both outside (if you want the inplace to be tracked)."),
    "inference": (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code "
                  "by moving both the view and the inplace either both inside the inference_mode block (if you don't "
                  "want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."),
    "multi_output": (" This view is the output of a function that returns multiple views. Such functions do not "
                     "allow the output views to be modified inplace. You should replace the inplace operation by an "
                     "out-of-place one."),
    "custom_function": (" This view was created inside a custom Function (or because an input was returned as-is) "
                        "and the autograd logic to handle view+inplace would override the custom backward associated "
                        "with the custom Function, leading to incorrect gradients. This behavior is forbidden. You "
                        "can fix this by cloning the output of the custom Function."),
}


def multi_output_views(views: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    """Mark views that one op returned together (``split``, ``chunk``, ``unbind``): their nodes
    take PyTorch's ``name``, and in-place changes of them are refused when autograd is involved
    (PyTorch's rule for multi-output views)."""
    for k, v in enumerate(views):
        if v._base is None:
            continue
        if v._node is not None:
            rename_node(v._node, name)
        if v._view_kind is None:
            v._view_kind = "multi_output"
        v._multi_index = k  # "Output k of Split" in the messages (each piece has a node of its own here)
    return views


def _output_nr(t: Any) -> int:
    """PyTorch's ``output_nr`` of ``t`` (a piece of split/chunk/unbind is output k of one node)."""
    return int(t.__dict__.get("_multi_index", t._output_nr))


def _short_name(node: Any) -> str:
    """A node's name as PyTorch's messages give it: ``MulBackward0`` -> ``Mul``."""
    return _strip_backward(getattr(node, "_short", None) or node.name())


def _strip_backward(name: str) -> str:
    return re.sub(r"Backward\d*$", "", name)


def view_rebase_error(t: Any, indirect: bool) -> str:
    """PyTorch's message for a view that may not be rebased: ``t`` is modified in place
    (``indirect=False``) or its base / another view of it was (``indirect=True``)."""
    kind = t._view_kind
    node = t._node
    mode, with_mode = ("inference mode", " in normal mode.") if kind == "inference" else \
        ("no_grad mode", " with grad mode enabled.")
    what = "its base or another view of its base has been modified inplace" if indirect else "is being modified inplace"
    if node is None:
        head = f"A view was created in {mode} and "
    elif kind in ("no_grad", "inference"):  # a view (with history) of such a view
        head = f"Output {_output_nr(t)} of {_short_name(node)} is a view of a view which was created in {mode} and "
    else:
        head, with_mode = f"Output {_output_nr(t)} of {_short_name(node)} is a view and ", "."
    return head + what + with_mode + _VIEW_FIX[kind]


# --------------------------------------------------------------------------
# recording


class _Anomaly:
    enabled = False
    check_nan = True
    running: Any = None  # the node whose backward is running (anomaly mode only)


anomaly = _Anomaly()


class _Profiling:
    active: list[Any] = []


profiling = _Profiling()

_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `ft.no_grad()` instead of `ft.inference_mode()`."
)


def _ns(v: Any) -> Any:
    return np if type(v) is np.ndarray else namespace_of(v)


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


def record(prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
    """Run ``prim`` on the raw values of ``args`` and record it if some input requires grad."""
    boxes = [args[i] for i in argnums]
    cls = NumpyBox
    req = False
    inference_in = False
    for i, b in zip(argnums, boxes):
        if b._base is not None and b._view_version != b._vc[0] and not b._requires_grad:
            _refresh_view(b)  # (views that require grad are refreshed when recorded, below)
        args[i] = b._value
        if b.__class__ is not NumpyBox:
            cls = _TENSOR_CLS[0]
        if b._requires_grad:
            req = True
        if b._inference:
            inference_in = True
    if kwargs:
        for v in kwargs.values():
            if isinstance(v, Box):
                kwargs = {k2: (v2._value if isinstance(v2, GraphBox) else v2) for k2, v2 in kwargs.items()}
                break
    st = _mode
    if req and not (st.enabled and prim.differentiable):
        req = False
    token = fp_quiet()
    try:
        if profiling.active:
            from .profiler import timed_call

            ans = timed_call(prim, args, kwargs)
        else:
            for a in args:
                if isinstance(a, Box):  # a box of a lower trace (a transform's constant box)
                    ans = prim.call(*args, **kwargs)
                    break
            else:
                ans = prim.raw(*args, **kwargs)
    except ValueError as err:
        raise _torch_shape_error(prim, args, err) from None
    finally:
        fp_restore(token)
    inference = st.inference
    if (inference_in or inference) and argnums[0] == 0 and prim.name in _VIEW_PRIMS \
            and getattr(ans, "base", None) is not None:
        inference = boxes[0]._inference  # a view is an inference tensor exactly when its base is (PyTorch)
    make = cls._make
    if prim.multiple_results:
        outs = [make(a if type(a) is np.ndarray else _as_array(a), inference=inference) for a in ans]
    else:
        outs = [make(ans if type(ans) is np.ndarray else _as_array(ans), inference=inference)]
        if argnums[0] == 0 and prim.name in _VIEW_PRIMS:
            _mark_view(outs[0], boxes[0], prim, args, kwargs)
    if not req:
        return tuple(outs) if prim.multiple_results else outs[0]
    # --- the node
    edges: list[Any] = []
    edge_positions = []
    for i, b in zip(argnums, boxes):
        if b._requires_grad:
            if b._base is not None and b._view_version != b._vc[0]:
                _refresh_view(b)
            node = b._node
            e = (node, b._output_nr) if node is not None else (get_accumulator(b), 0)
            edges.append(e)
            edge_positions.append(i)
        else:
            edges.append(None)
    drop = dropped(prim, edge_positions, len(args))
    name = torch_name(prim.name)
    node = (_NAMED_CLASSES.get((PrimNode, name)) or named_node_class(PrimNode, name))(
        prim, name, args, kwargs, argnums, edges)
    saved_any = False
    for i, b in zip(argnums, boxes):
        if drop is None or i not in drop[0]:
            if b._inference:  # only ops that save an inference tensor refuse it (PyTorch)
                raise RuntimeError(_INFERENCE_SAVED)
            args[i] = SavedTensor(b)
            saved_any = True
        else:
            args[i] = _Meta(args[i])
    out_meta = []
    ans_saved = node._ans
    for k, o in enumerate(outs):
        v = o._value
        out_meta.append((v.shape, v.dtype, _ns(v)))
        o._node = node
        o._output_nr = k
        o._requires_grad = True
        if drop is None or not drop[1]:
            ans_saved.append(SavedTensor(o, is_output=True, output_nr=k, owner=node))
            saved_any = True
        else:
            ans_saved.append(_Meta(v))
    node._out_meta = tuple(out_meta)
    node._has_saved = saved_any
    if len(outs) != 1:
        node._n_outputs = len(outs)
    if anomaly.enabled:
        node._stack = user_stack()
    return tuple(outs) if prim.multiple_results else outs[0]


_PKG_DIR = __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__)))


class _Stack(list[Any]):
    """Formatted frames, and the node whose backward was running when they were taken (if any)."""

    __slots__ = ("parent",)
    parent: Any


def user_stack() -> list[Any]:
    """The current Python stack without funcgrad's own frames (for anomaly mode); its ``parent``
    is the node whose backward created this one (double backward), for the nested report."""
    frames = traceback.extract_stack()
    keep = [f for f in frames if not f.filename.startswith(_PKG_DIR)]
    stack = _Stack(traceback.format_list(keep))
    stack.parent = anomaly.running
    return stack


def _as_array(a: Any) -> Any:
    if isinstance(a, np.generic):
        return np.asarray(a)
    if isinstance(a, (int, float, complex, bool)):
        return np.asarray(a)
    return a


def _mark_view(out: GraphBox, src: GraphBox, prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> None:
    a, o = _fwad.primal_value(args[0]), _fwad.primal_value(out._value)  # dual tensors view their primal's memory
    ob = getattr(o, "base", None)
    if ob is None or o is a or not (ob is a or ob is getattr(a, "base", None)):
        return
    root = src._base if src._base is not None else src
    out._base = root
    out._vc = src._vc
    out._view_fns = (src._view_fns or ()) + ((prim, tuple(args[1:]), dict(kwargs)),)
    out._view_version = src._vc[0]
    kind = src._view_kind if src._base is not None else None  # a view of a view inherits (PyTorch)
    if kind is None and not _mode.enabled:
        kind = "inference" if _mode.inference else "no_grad"
    if kind is not None and type(out) is not NumpyBox:
        out.__dict__["_view_kind"] = kind  # (Tensors have a __dict__; GraphBox's class default is None)


# --------------------------------------------------------------------------
# in-place operations


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
    if _fwad.is_dual(v) or _fwad.is_dual(ov):  # forward AD: primal into memory, the tangent rebound
        v, ov = _fwad.inplace_write(t, ov)  # the raw memory and the new primal
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
    if isinstance(node, PrimNode) and node._seq >= start_seq and nr < len(node._ans):
        s = node._ans[nr]  # a saved result is now t's memory (a later change of it is detected)
        if type(s) is SavedTensor and s._unpack is None:
            s._data = v
            s._vc = t._vc
            s._version = t._vc[0]
    if root is None:
        old = t._node, t._output_nr
        t._node, t._output_nr, t._requires_grad = node, nr, out._requires_grad
        move_retain(t, *old)
    else:
        if t._node is not None and out._requires_grad and _hooks_on_view_chain(t):
            _bypass_view_node(out, start_seq, t)  # (without such hooks, the same gradients either way)
        rebase_view(t, edge_of(out) if out._requires_grad else None)
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
    base_edge = edge_of(root) if root._requires_grad else None
    rv = root._value
    cs = CopySlices(base_edge, out_edge, t._view_fns, (rv.shape, rv.dtype, namespace_of(rv)))
    if anomaly.enabled:
        cs._stack = user_stack()
    old = root._node, root._output_nr
    root._node, root._output_nr, root._requires_grad = cs, 0, True
    move_retain(root, *old)
    old = t._node, t._output_nr
    w = fresh_view(root, t._view_fns)
    if w._node is not cs:
        rename_node(w._node, "AsStridedBackward0")
    t._node, t._output_nr, t._requires_grad = w._node, w._output_nr, True
    t._view_version = t._vc[0]
    move_retain(t, *old)


def _hooks_on_view_chain(t: Any) -> bool:
    """Whether a node between the view ``t`` and its base (one per view operation) has hooks."""
    node = t._node
    for _ in t._view_fns:
        if node is None:
            return False
        if node._prehooks or node._hooks or node._tensor_prehooks:
            return True
        edge = node._edges[0] if node._edges else None
        node = edge[0] if edge is not None else None
    return False


def _bypass_view_node(out: Any, start_seq: int, t: Any) -> None:
    """PyTorch's CopySlices hands the in-place op's gradient for the view straight to the base,
    so the view's old node (and the hooks registered on it) is not on that path. Re-point the
    op's own nodes (made since ``start_seq``) from the view's old node to a fresh view of the
    base's history before the change (same gradient, no hooks)."""
    old_node, old_nr = t._node, t._output_nr
    new_edge: tuple[Any, ...] | None = None
    seen = set()
    stack = [out._node]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or node._seq < start_seq:
            continue
        seen.add(id(node))
        edges = node._edges
        for k, e in enumerate(edges):
            if e is None:
                continue
            if e[0] is old_node and e[1] == old_nr:
                if new_edge is None:
                    w = fresh_view(t._base, t._view_fns)
                    new_edge = (w._node, w._output_nr)
                _repoint_edge(node, k, new_edge)
            else:
                stack.append(e[0])
        for a in getattr(node, "_args", ()):
            if type(a) is SavedTensor and a._edge is not None and a._edge[0] is old_node and new_edge is not None:
                a._edge = new_edge


def _repoint_edge(node: Any, k: int, edge: tuple[Any, ...]) -> None:
    """Send the gradient of ``node``'s k-th tensor input to ``edge`` (node, output_nr) instead."""
    node._edges[k] = edge


def _protect_saved(out: Any, t: Any, start_seq: int) -> None:
    seen = set()
    stack = [out._node]
    vc = t._vc
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or node._seq < start_seq:
            continue
        seen.add(id(node))
        if isinstance(node, PrimNode):
            for a in node._args:
                if type(a) is SavedTensor and a._vc is vc and a._version == vc[0]:
                    a._detach_copy()
        for e in node._edges:
            if e is not None:
                stack.append(e[0])


# --------------------------------------------------------------------------
# saved-tensor hooks


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside is packed with
    ``pack_hook(tensor)`` and unpacked with ``unpack_hook(packed)`` when backward
    needs it (thread-local, innermost wins), as ``torch.autograd.graph.saved_tensors_hooks``.

    Example::

        def pack(t):
            name = os.path.join(tmp, f"{uuid.uuid4()}.npy"); np.save(name, t.numpy()); return name
        def unpack(name):
            return ft.from_numpy(np.load(name))
        with ft.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * x).sum()
        y.backward()          # same gradient, saved values read back from disk
    """

    def __init__(self, pack_hook: Callable[..., Any], unpack_hook: Callable[..., Any]):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks(pack_hook, unpack_hook): both hooks must be callable")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if _hook_state.disabled is not None:
            raise RuntimeError(_hook_state.disabled)
        _hook_state.stack = _hook_state.stack + [(self.pack_hook, self.unpack_hook)]
        return self

    def __exit__(self, *exc: Any) -> None:
        _hook_state.stack = _hook_state.stack[:-1]


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept in host memory and moved back to their device in backward.

    With NumPy arrays (already on the host) the value is kept as it is.

    Example::

        with ft.autograd.graph.save_on_cpu():
            loss = model(x).sum()
    """

    def __init__(self, pin_memory: bool = False):
        def pack(t: Any) -> tuple[Any, ...]:
            v = t._value
            ns = namespace_of(v)
            if ns is np:
                return (None, t)
            host = v.get() if hasattr(v, "get") else ns.asnumpy(v)
            return (ns, host)

        def unpack(packed: tuple[Any, ...]) -> Any:
            ns, payload = packed
            if ns is None:
                return payload
            return _TENSOR_CLS[0]._make(ns.asarray(payload))

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside, registering saved-tensor hooks raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str):
        self.message = error_message

    def __enter__(self) -> None:
        self.prev = _hook_state.disabled
        _hook_state.disabled = self.message

    def __exit__(self, *exc: Any) -> None:
        _hook_state.disabled = self.prev


_init_view_prims()
