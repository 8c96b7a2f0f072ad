"""Recording: the tensor trace, boxes, graph nodes (``grad_fn``), saved tensors, views.

Tensors are boxes of one process-wide reverse trace, :data:`TRACE` (a :class:`TensorTrace`,
a kind of the engine's ``ReverseTrace``), whose level (0) is below every functional
transform's, and which is never closed. So every ``funcgrad.numpy`` primitive called on a
Tensor reaches, through the primitive wrapper, the core's one recording path,
``ReverseTrace.process``, whose steps the Tensor trace overrides:

1. ``run``: the raw arrays are computed by the primitive's raw function;
2. ``new_node``: if grad mode is on and some input requires grad, a :class:`PrimNode` (a
   kind of the engine's ``VJPNode``, of the primitive's PyTorch class) is made. It keeps
   what the primitive's VJP rules read, and only that (the primitive's declared ``reads``,
   applied by the skeleton): ``save_inputs`` keeps the arrays with their version counters,
   as :class:`SavedTensor` objects (hooks, ``_raw_saved_*``) when asked;
3. ``new_boxes``: the results are Tensors; views (reshape, transpose, basic indexing ...)
   share their base's version counter and remember how to replay themselves on the base,
   so that an in-place change through a view can rebase the graph (:func:`apply_inplace`,
   the ``CopySlices`` node).

Backward is the engine's ``backward_pass`` with this layer's visitor (``backward.py``).
Beside this module: PyTorch's names and messages (``torch_names.py``), saved-tensor hooks
(``saved_hooks.py``), NumPy's error state (``quiet.py``), the debugging flags
(``debug_modes.py``), forward AD's levels (``dual_trace.py``) and the registered Tensor
class (``tensor_class.py``).
"""

from __future__ import annotations

import collections
import contextvars
import itertools
import os
import re
import threading
import time
import traceback
import weakref
from functools import partial
from typing import Any, Callable, Iterator, TypeVar, cast

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, Primitive, Trace, get_primitive
from ..core.reverse import _MIN_DROP_BYTES, ArraySpec, ReverseTrace, VJPNode, _save_everything, dropped
from ..numpy import indexing as _indexing
from . import dtypes as _dt
from .dual_trace import conform_dual, is_dual, primal_value
from .grad_mode import enable_grad, no_grad
from .grad_mode import state as _mode
from .quiet import context_busy, fp_quiet, fp_restore, quiet_run
from .tensor_class import _TENSOR_CLS
from .debug_modes import anomaly, profiling, user_stack
from .torch_names import (
    _DEFAULT_ARG_NAMES, _FREED, _INFERENCE_SAVED, ARG_NAMES, _output_nr, _short_name, _strip_backward, _type_desc,
    arg_names, named_node_class, rename_node, torch_name, view_rebase_error,
)
from .saved_hooks import _hook_state

__all__ = [
    "TRACE", "GraphBox", "NumpyBox", "Node", "PrimNode", "AccumulateGrad", "SavedTensor", "RemovableHandle",
    "apply_inplace", "edge_of", "get_gradient_edge",
]


# Set by funcgrad.tensor._func_support while an ft.func transform runs a function, else None.
FUNC_TRANSFORM_HOOK: list[Any] = [None]

# --------------------------------------------------------------------------
# boxes


_new = object.__new__
_IGNORE_ONE: Callable[[Any], None] = collections.deque(maxlen=0).append  # f(x) -> None, keeping nothing
_IGNORE_TWO = cast("Callable[[Any, Any], None]", slice)  # f(x, y) -> a slice, for a setter (its result is ignored)
_new_node: Callable[[type], Any] = object.__new__
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
    # (read by the primitive wrapper on every call: a property whose getter and setter are C functions
    # that ignore their arguments, the getter returning None, so that the read costs no Python frame)
    _view = property(_IGNORE_ONE, _IGNORE_TWO)

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
        return b

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
        for slot in ("_value", "_node", *GraphBox.__slots__):
            setattr(self, slot, getattr(new, slot))

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._assign(fnp.at(self)[idx].set(value))

    # ``a += b`` and the others: ``a`` rebound to ``a + b`` (its node, its version counter)
    def _rebind(self, op_name: str, other: Any) -> "NumpyBox":
        self._assign(getattr(fnp, op_name)(self, other))
        return self

    def __iadd__(self, other: Any) -> "NumpyBox":
        return self._rebind("add", other)

    def __isub__(self, other: Any) -> "NumpyBox":
        return self._rebind("subtract", other)

    def __imul__(self, other: Any) -> "NumpyBox":
        return self._rebind("multiply", other)

    def __itruediv__(self, other: Any) -> "NumpyBox":
        return self._rebind("divide", other)

    def __ipow__(self, other: Any) -> "NumpyBox":
        return self._rebind("power", other)

    def __imatmul__(self, other: Any) -> "NumpyBox":
        return self._rebind("matmul", other)


def as_numpy_box(b: Any) -> Any:
    """The same recorded value as a NumpyBox (sharing node and version counter)."""
    if not isinstance(b, GraphBox) or type(b) is NumpyBox:
        return b
    b._graph()  # (refreshes a stale view)
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
_next_seq = _seq.__next__  # (a bound C method: the cheapest call for every node)


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


class Node(VJPNode):
    """A node of the backward graph (``tensor.grad_fn``), like ``torch.autograd.graph.Node``.

    A tape node of the core engine (:class:`funcgrad.core.reverse.VJPNode`):
    ``parents`` are the nodes gradients flow to (for output k of a node of
    several outputs, that output's own ``out_index`` node), ``argnums`` the
    input each one belongs to, and ``core.reverse.backward_pass`` walks them.
    What PyTorch exposes on top: ``name()``, ``next_functions`` (one ``(node,
    output_nr)`` pair per tensor input, ``(None, 0)`` for inputs that need no
    gradient), ``metadata``, ``register_hook(fn(grad_inputs, grad_outputs))``
    and ``register_prehook(fn(grad_outputs))``.
    """

    # what every node sets; the rest has defaults at class level, and a node only stores
    # what it changes (in its __dict__, made on first use): cheap to create
    __slots__ = ("_seq", "_inputs", "_out_meta", "_released", "__dict__")
    _name = "Node"
    _hooks: dict[Any, Any] | None = None
    _prehooks: dict[Any, Any] | None = None
    _tensor_prehooks: dict[Any, Any] | None = None  # output_nr -> {id: hook}: hooks of non-leaf tensors
    _stack: Any = None  # forward traceback, in anomaly mode
    _n_outputs = 1
    _out_meta: tuple[Any, ...]  # (shape, dtype, namespace) of each output
    _outs: list[Any] | None = None  # weakly, the out_index node of each output (nodes of several outputs)
    # a primitive's node of one output and no hooks: the backward pass may take vjp directly
    _short_step = False
    _inputs: Any  # the position of each tensor input (next_functions' order)
    _released: bool

    def __init__(self, inputs: Any = (), edges: Any = ()) -> None:
        self.prim = self.args = self.kwargs = self.ans = self.versions = self.out_index = None
        self._seq = _next_seq()
        self._out_meta = ()
        self._released = False
        # edges [(node, output_nr) or None], one per tensor input, at positions ``inputs``
        self._inputs = tuple(inputs)
        self.parents = [target(*e) for e in edges if e is not None]
        self.argnums = [i for i, e in zip(self._inputs, edges) if e is not None]

    def name(self) -> str:
        return self._name

    @property
    def _edges(self) -> list[Any]:
        """Per tensor input, the (node, output_nr) its gradient goes to, or None."""
        by_pos = dict(zip(self.argnums, self.parents))
        return [None if (p := by_pos.get(i)) is None else public_edge(p) for i in self._inputs]

    @property
    def next_functions(self) -> tuple[Any, ...]:
        return tuple(e if e is not None else (None, 0) for e in self._edges)

    @property
    def metadata(self) -> dict[Any, Any]:
        return cast("dict[Any, Any]", self.__dict__.setdefault("_metadata", {}))

    def _hook_dict(self, kind: str) -> dict[Any, Any]:
        """The node's dict ``kind`` (hooks, retained tensors), made on first use."""
        got = getattr(self, kind)
        if got is None:
            got = {}
            setattr(self, kind, got)
            self._short_step = False  # the backward pass has hooks to run here
        return cast("dict[Any, Any]", got)

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        return _add_hook(self._hook_dict("_hooks"), fn)

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        return _add_hook(self._hook_dict("_prehooks"), fn)

    def _tensor_hook(self, output_nr: int, fn: Callable[..., Any]) -> RemovableHandle:
        return _add_hook(self._hook_dict("_tensor_prehooks").setdefault(output_nr, {}), fn)

    @property
    def _retain(self) -> dict[Any, Any] | None:
        """output_nr -> weakref to a tensor with retain_grad()."""
        return self.__dict__.get("_retained")

    @_retain.setter
    def _retain(self, value: dict[Any, Any] | None) -> None:
        self.__dict__["_retained"] = value
        self._short_step = False

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        """The gradients of ``parents`` (one each, or None) from the output gradients ``grads``
        (or one per tensor input, None where there is no edge, in ``next_functions`` order)."""
        raise NotImplementedError

    def release(self) -> None:
        self._released = True

    def __repr__(self) -> str:
        return f"<{getattr(self, '_short', None) or self._name} object at {id(self):#x}>"

    def __call__(self, *grads: Any) -> Any:
        """``grad_fn(*grads)``: the node run on given output gradients (by ``backward.call_node``)."""
        return _NODE_CALL[0](self, grads)


# how ``grad_fn(*grads)`` runs a node: registered by backward.py (which imports this module)
_NODE_CALL: list[Callable[..., Any]] = []


def register_node_call(fn: Callable[..., Any]) -> None:
    """Register ``fn(node, grads)`` as what calling a node does (``backward.call_node``)."""
    _NODE_CALL[:] = [fn]


def target(node: Node, output_nr: int) -> VJPNode:
    """The tape node gradients of output ``output_nr`` of ``node`` go to: the node itself, or,
    for a node of several outputs, that output's ``out_index`` node (made on first use)."""
    if node._n_outputs == 1:
        return node
    outs = node._outs
    if outs is None:
        outs = node._outs = [None] * node._n_outputs
    ref = outs[output_nr]
    t: VJPNode | None = ref() if ref is not None else None
    if t is None:  # held weakly: no reference cycle, the graph is freed when its last tensor goes
        t = OutputNode(None, (node,), (0,), None, None, None, output_nr)
        outs[output_nr] = weakref.ref(t)
    return t


class OutputNode(VJPNode):
    """Output ``out_index`` of a node of several outputs, on the tape (as the core files them)."""

    __slots__ = ()
    _short_step = False


def public_edge(t: VJPNode) -> tuple[Any, int]:
    """(grad_fn, output_nr) of a tape node (the inverse of :func:`target`)."""
    if t.out_index is None:
        return (t, 0)
    return (t.parents[0], t.out_index)


class SavedTensor:
    """One tensor a node saved for backward (``grad_fn._raw_saved_self``).

    Keeps the array, the edge to re-attach in create_graph mode, and the
    version of the tensor when it was saved: a later in-place change makes
    backward raise PyTorch's "modified by an inplace operation" error.
    ``register_hooks(pack, unpack)`` moves the value out (pack) and back (unpack).
    Made by :func:`save` (custom Functions), or by a :class:`PrimNode` from what it
    saved when something asks for the object (see ``PrimNode._saved``).
    """

    __slots__ = ("_data", "_box", "_edge", "_vc", "_version", "_is_output", "_output_nr",
                 "_packed", "_unpack", "_released", "_desc", "__weakref__")
    _data: Any  # the array (None once packed or released)
    _box: Any  # the saved input itself (for its graph), None for outputs
    _edge: Any  # (node, output_nr) of the saved value, or None
    _vc: list[int]  # the tensor's version counter, and its value when saved:
    _version: int
    _is_output: bool
    _output_nr: int
    _packed: Any
    _unpack: Callable[..., Any] | None
    _released: bool
    _desc: tuple[Any, ...] | None  # (node name, output_nr) of the saved value's history when saved, if any

    def __init__(self, data: Any, box: Any, vc: list[int], version: int, is_output: bool, output_nr: int,
                 desc: tuple[Any, ...] | None, released: bool = False):
        self._data, self._box, self._vc, self._version = data, box, vc, version
        self._is_output, self._output_nr, self._desc, self._released = is_output, output_nr, desc, released
        self._packed = self._unpack = self._edge = None

    def _pack_now(self, hooks: tuple[Callable[..., Any], Callable[..., Any]], box: Any = None) -> None:
        """Pack the value with ``hooks`` (pack, unpack): ``pack`` gets a detached alias (same memory and
        version counter, no history) and runs without recording, as in PyTorch; changing that alias
        in place is an error."""
        if box is not None and not self._is_output:
            self._edge = edge_of(box)
        vc = self._vc
        alias = _TENSOR_CLS[0]._make(self._data, vc=vc, inference=box is not None and box._inference)
        version = vc[0]
        with no_grad():
            self._packed = hooks[0](alias)
        if vc[0] != version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
                "can not be modified by in-place operations as this can lead to unexpected side-effects. Return "
                "a modified copy instead."
            )
        self._unpack = hooks[1]
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
        self._pack_now((pack_hook, unpack_hook), self._box)

    def _detach_copy(self) -> None:
        """Keep a private copy of the value (an in-place op is about to overwrite it)."""
        if self._unpack is not None or self._data is None:
            return
        if self._box is not None:
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
            desc = _type_desc(self._data) if self._data is not None else "[a saved tensor]"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {desc}{where} is at version {self._vc[0]}; expected version "
                f"{self._version} instead. Hint: enable anomaly detection to find the operation that "
                f"failed to compute its gradient, with ft.autograd.set_detect_anomaly(True, check_nan=False)."
            )

    def unpack_raw(self, owner: Node | None = None) -> Any:
        """The saved value's array, after the checks: not freed, not detached in place, not changed in place."""
        if self._released:
            raise RuntimeError(_FREED)
        box = self._box
        if self._desc is not None and box is not None and box._node is None and not box._requires_grad:
            raise RuntimeError(
                "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_(). If you need "
                "to mutate the saved tensor, use .detach() (which makes a new tensor) instead."
            )
        value = self._data
        if self._unpack is not None:
            t = self._unpack(self._packed)
            if not isinstance(t, GraphBox):
                raise TypeError(
                    f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                    f"{type(t).__name__}"
                )
            value = t._value
        self._check_version(owner)
        return value

    def unpack(self, owner: Node | None = None, numpy_box: bool = True) -> Any:
        """The saved value as a recorded box carrying its graph (for create_graph and ``_saved_*``)."""
        raw = self.unpack_raw(owner)
        if self._unpack is None and self._box is not None:
            return as_numpy_box(self._box) if numpy_box else self._box
        cls = NumpyBox if numpy_box else _TENSOR_CLS[0]
        if self._is_output:
            vc = self._vc if self._unpack is None else None  # the output itself: its version counter
            if owner is None:
                return cls._make(raw, vc=vc)
            return cls._make(raw, owner, self._output_nr, True, vc=vc)
        if self._edge is not None:
            node, nr = self._edge
            if isinstance(node, AccumulateGrad) and not numpy_box and self._unpack is None:
                return node.variable
            return cls._make(raw, node, nr, True)
        return cls._make(raw)

    def release(self) -> None:
        self._released = True
        self._data = self._box = self._packed = None


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients to ``variable.grad``."""

    _name = "torch::autograd::AccumulateGrad"  # what PyTorch's name() returns
    _short = "AccumulateGrad"

    def __init__(self, variable: Any):
        super().__init__()
        self.ans = ()
        self._variable = weakref.ref(variable)
        self._out_meta = _out_meta(variable._value)

    @property
    def variable(self) -> Any:
        """The leaf tensor (None once it has been garbage-collected)."""
        return self._variable()


# ``PrimNode._saved`` once released: one entry that fails ``intact`` (version 0 of a counter at 1)
_RELEASED = ((-1, None, [1], 0, None),)


def intact(saved: tuple[Any, ...]) -> bool:
    """Whether the values of ``PrimNode._saved`` entries are as saved: no in-place change since
    (the version counters), no ``detach_()`` of an input that had history (PyTorch refuses
    both, with the messages :class:`SavedTensor` gives), not released."""
    for _, _, vc, version, check in saved:
        if vc[0] != version or (check is not None and not check._requires_grad):
            return False
    return True


class PrimNode(Node):
    """A recorded call of a funcgrad primitive; its backward runs the primitive's VJP rules.

    ``args`` holds, per positional argument, what the rules get: the array of a saved
    tensor, what they do not read (the array when small, else its
    :class:`~funcgrad.core.reverse.ArraySpec`, as the core keeps it), or the constant;
    ``ans`` one of those per output. ``_saved`` says which are saved tensors, one
    ``(position, input, version counter, version when saved, detach check)`` each
    (position ``~k`` for output k, whose tensor is not kept: no reference cycle; the
    detach check is the input itself when it had history, else None); the
    backward pass checks the versions and calls the rules on the arrays as they are.
    :class:`SavedTensor` objects are made from it only when something needs one
    (``_raw_saved_*``, saved-tensor hooks, an error to report, an in-place change to
    protect against): ``_materialize`` puts them in ``args``/``ans`` and sets ``_saved``
    to None.
    """

    __slots__ = ("_saved",)
    _saved: Any  # tuple of entries (raw values in args/ans), or None (SavedTensors there)
    prim: Primitive
    _short_step = True  # one output (class level: set False on nodes of several)

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        if self.prim.multiple_results:
            g = tuple(gk if gk is not None else _zeros(m) for gk, m in zip(grads, self._out_meta))
            return self.vjp(g, tuple(grads), create_graph)
        return self.vjp(grads[0], grads[0], create_graph)

    def vjp(self, g: Any, g_all: Any, create_graph: bool, release: bool = False) -> list[Any]:
        """The gradients of ``parents`` by the primitive's rules (``g_all``: what ``vjp_all``
        sees, None for results that got no gradient); on boxes that record with ``create_graph``;
        with ``release``, the saved values are freed afterwards."""
        prim = self.prim
        saved = self._saved
        if saved and (create_graph or not intact(saved)):
            # recorded boxes to unpack, or changed in place, detached or freed since: the SavedTensors' checks raise
            self._materialize()
            saved = None
        args, ans = self.args, self.ans
        if saved is None:
            unpack = SavedTensor.unpack if create_graph else SavedTensor.unpack_raw
            args = [unpack(a, self) if type(a) is SavedTensor else a for a in args]
            ans = [unpack(a, self) if type(a) is SavedTensor else a for a in ans]
        ans = tuple(ans) if prim.multiple_results else ans[0]
        out = self.run_rules(g, g_all, ans, args, self.kwargs)
        if release:
            self.release()
        return out

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        saved = self._saved
        if saved is None:
            for a in (*self.args, *self.ans):
                if type(a) is SavedTensor:
                    a.release()
        elif saved:
            args, ans = self.args, self.ans
            for e in saved:
                if e[0] >= 0:
                    args[e[0]] = None
                else:
                    ans[~e[0]] = None
            self._saved = _RELEASED

    def _materialize(self, hooks: tuple[Callable[..., Any], Callable[..., Any]] | None = None) -> None:
        """Put a :class:`SavedTensor` in ``args``/``ans`` for each saved value (packed by the
        saved-tensor ``hooks`` (pack, unpack) if given); from then on they are what backward reads."""
        saved = self._saved
        if saved is None:
            return
        self._saved = None
        self._short_step = False  # the backward pass's short way reads raw values
        args, ans = self.args, self.ans
        if saved is _RELEASED:  # released: the saved values are gone (tensor inputs are never None otherwise)
            for i in self._inputs:
                if args[i] is None:
                    args[i] = SavedTensor(None, None, [0], 0, False, 0, None, released=True)
            for k, a in enumerate(ans):
                if a is None:
                    ans[k] = SavedTensor(None, None, [0], 0, True, k, None, released=True)
            return
        for pos, box, vc, version, check in saved:
            if pos >= 0:
                desc = None
                if check is box:  # an input with history when saved: its (node, output_nr) then
                    node, nr = public_edge(self.parents[self.argnums.index(pos)])
                    desc = (node._name, nr)
                s = args[pos] = SavedTensor(args[pos], box, vc, version, False, 0, desc)
            else:
                s = ans[~pos] = SavedTensor(ans[~pos], None, vc, version, True, ~pos, (self._name, ~pos))
            if hooks is not None:
                s._pack_now(hooks, box)

    def _arg_name(self, i: int) -> str:
        """PyTorch's name of positional argument ``i`` (``_saved_<name>``)."""
        names = arg_names(self.prim)
        return names[i] if i < len(names) else f"arg{i}"

    def _read_saved(self, key: str, raw: bool) -> Any:
        """``_saved_<key>`` (``raw``: ``_raw_saved_<key>``); see :func:`_expose_saved`."""
        entry = self._lookup_saved(key)
        if type(entry) is SavedTensor:  # (a freed one raises in unpack)
            return entry if raw else entry.unpack(self, numpy_box=False)
        if entry is not None and not raw:
            return entry
        raise AttributeError(f"'{self._name}' object has no attribute '{'_raw_saved_' if raw else '_saved_'}{key}'")

    def _lookup_saved(self, key: str) -> Any:
        self._materialize()
        if key.startswith("result") and (key[6:].isdigit() or key == "result"):  # "result": of a node of one output
            k = int(key[6:] or 0)
            ok = k < len(self.ans) and (key != "result" or len(self.ans) == 1)
            return self.ans[k] if ok and type(self.ans[k]) is SavedTensor else None
        drop = dropped(self.prim, list(self.argnums), len(self.args))
        unread = drop[0] if drop is not None else ()  # tensor inputs the rules do not read (kept when small)
        for i, a in enumerate(self.args):
            if self._arg_name(i) == key and type(a) is not ArraySpec and i not in unread:
                return a
        if key in self.kwargs:
            return self.kwargs[key]
        return None

    def __dir__(self) -> list[Any]:
        self._materialize()
        keys = [self._arg_name(i) for i, a in enumerate(self.args) if type(a) is SavedTensor]
        if any(type(a) is SavedTensor for a in self.ans):
            keys.append("result")
        extra = [f"_{raw}saved_{key}" for key in keys for raw in ("", "raw_")]
        own = [n for n in super().__dir__() if not n.startswith(("_saved_", "_raw_saved_"))]
        return sorted(set(own + extra))


_SAVED_KEYS: set[str] = set()


def _expose_saved(keys: Any) -> None:
    """PrimNode's ``_saved_<key>``/``_raw_saved_<key>`` as properties (once each; keyword names as they are
    recorded): a ``__getattr__``'s mere presence would make every attribute read of every node slower."""
    for key, raw in itertools.product(set(keys) - _SAVED_KEYS, (False, True)):
        setattr(PrimNode, f"_{'raw_' * raw}saved_{key}", property(partial(PrimNode._read_saved, key=key, raw=raw)))
    _SAVED_KEYS.update(keys)


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
    mask = ns.zeros(shape, dtype=dtype if complex_base else bool)
    region = replay_view(mask, view_fns, raw=True)
    if type(region) is np.ndarray and not region.flags.writeable:
        region.flags.writeable = True  # NumPy's diagonal: read-only by convention only
    region[...] = (1 + 1j if region.dtype.kind == "c" else 1) if complex_base else True
    return mask


# --------------------------------------------------------------------------
# PyTorch's names of saved values and of nodes (what a node saves is its primitive's ``reads``)

_expose_saved([*_DEFAULT_ARG_NAMES, *sum(ARG_NAMES.values(), []), "result",
               *(f"{p}{k}" for p in ("result", "arg") for k in range(32))])


# --------------------------------------------------------------------------
# views

# the primitives whose result is a view of their first argument (tests/tensor/test_tensor_inplace_views.py
# checks that each result shares its argument's memory)
VIEW_PRIMITIVES = frozenset(get_primitive(fn) for fn in (
    fnp.reshape, fnp.transpose, fnp.swapaxes, fnp.moveaxis, fnp.expand_dims, fnp.squeeze, fnp.diagonal, fnp.real,
    fnp.imag, _indexing._getitem))


def replay_view(x: Any, view_fns: tuple[Any, ...], raw: bool, cotangent: bool = False) -> Any:
    """Apply a recorded chain of view operations to ``x`` (a base-shaped array or box). With
    ``cotangent``, ``x`` is a cotangent of the base and ``imag`` also flips the sign (funcgrad's
    complex cotangents follow JAX: that of ``x + iy`` is ``ct_x - i ct_y``)."""
    for prim, rest, kwargs in view_fns:
        x = (prim.raw if raw else prim.call)(x, *rest, **kwargs)
        if cotangent and prim.name == "imag":
            x = -x
    return x


def _refresh_view(b: GraphBox) -> None:
    """A view whose base changed in place re-derives its history from the base (PyTorch
    regenerates a stale view's ``grad_fn`` the same way). A view that may not follow its
    base (made in no-grad mode, by a custom Function, ...) raises instead; its
    ``retain_grad()`` moves to the new node, its hooks stay with the old one."""
    base = b._base
    if is_dual(base._value) or is_dual(b._value):  # forward AD: the tangent follows the base's
        b._value = replay_view(base._value, b._view_fns, raw=False)
    if b._view_kind is not None and (b._node is not None or base._requires_grad):
        if _mode.enabled:
            raise RuntimeError(view_rebase_error(b, indirect=True))
        return  # stays stale: a later use with grad mode on raises, as in PyTorch
    _follow_base(b)


def _follow_base(t: Any) -> None:
    """The view ``t`` takes its history from its base's current one: a fresh view of it
    (``AsStridedBackward0``, as PyTorch names it), or none if the base needs no gradient."""
    t._view_version = t._vc[0]
    old = t._node, t._output_nr
    if t._base._requires_grad:
        w = fresh_view(t._base, t._view_fns)
        if w._node is not t._base._node:
            rename_node(w._node, "AsStridedBackward0")
        t._node, t._output_nr, t._requires_grad = w._node, w._output_nr, True
    elif t._node is not None:
        t._node, t._requires_grad = None, False
    # (else: a view that was made a leaf with requires_grad_() stays one, as in PyTorch)
    move_retain(t, *old)


def fresh_view(base: GraphBox, view_fns: tuple[Any, ...]) -> Any:
    """Record ``view_fns`` afresh on ``base``'s current history (new nodes, no hooks)."""
    with enable_grad():
        return replay_view(as_numpy_box(base), view_fns, raw=False)


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
    node._hook_dict("_retain")[t._output_nr] = weakref.ref(t)


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


# --------------------------------------------------------------------------
# recording


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
    one recording path, ``ReverseTrace.process``, and overrides only its steps: what a box
    links (:meth:`unbox`: the Tensors and their version counters), the raw call (:meth:`run`:
    NumPy's warnings silenced, PyTorch's shape errors, the profiler), the node
    (:meth:`new_node`: PyTorch's node class, only when grad mode is on and an input requires
    grad), what it saves (:meth:`save_inputs`: version-checked entries, packed by saved-tensor
    hooks) and the results (:meth:`new_boxes`: Tensors, views of their base). The graph is
    walked by ``core.reverse.backward_pass`` with the Tensor layer's visitor.
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

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
        """``ReverseTrace.process``; while an ft.func transform runs a function, through its hook
        (``FUNC_TRANSFORM_HOOK``: views and no_grad of traced values, see ``_func_support``)."""
        hook = FUNC_TRANSFORM_HOOK[0]
        if hook is not None:
            return hook(record, prim, args, kwargs, argnums)
        if len(argnums) == 1 and not kwargs:
            b = args[argnums[0]]
            st = _mode
            if b.__class__ is _TENSOR_CLS[0] and b._requires_grad and st.enabled and b._base is None \
                    and not (b._inference or st.inference or profiling.active or anomaly.enabled):
                cls = _ONE_TENSOR.get(prim)
                if cls is None:
                    cls = _ONE_TENSOR[prim] = prim.differentiable and not prim.multiple_results \
                        and prim not in VIEW_PRIMITIVES and _node_class(prim)
                if cls:  # the commonest call (one Tensor argument, not a view, not an inference tensor,
                    # requiring grad, grad mode on, no keyword arguments, a differentiable primitive of one result
                    # that makes no view): the steps below, done in this frame (tests/test_recording_path.py
                    # checks that both make the same node)
                    i = argnums[0]
                    args[i] = b._value
                    fast = prim.fast_types
                    for a in args:
                        if type(a) not in fast:
                            ans = _raw_call(prim, args, NO_KWARGS)
                            break
                    else:  # (TensorTrace.run, inline)
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
                    parent = b._node
                    if parent is None:
                        parent = get_accumulator(b)
                    elif parent._n_outputs != 1:
                        parent = target(parent, b._output_nr)
                    drop = prim.drop_cache.get((len(args), i)) if not _save_everything.on else None
                    if drop is None:
                        drop = dropped(prim, [i], len(args)) or ((), False)
                    node = _new_node(cls)
                    node.prim = prim
                    node.parents = [parent]
                    node.argnums = node._inputs = argnums
                    node.kwargs = NO_KWARGS
                    node.out_index = node.versions = None
                    node._seq = _next_seq()
                    node._released = False
                    node.args = args
                    out = _new(_TENSOR_CLS[0])  # (GraphBox._make, inline)
                    out._value = ans
                    out._trace = TRACE
                    out._node = node
                    out._output_nr = 0
                    out._requires_grad = True
                    out._vc = [0]
                    out._base = None
                    out._view_fns = None
                    out._view_version = 0
                    out._inference = False
                    saved: tuple[Any, ...] = ()
                    if i not in drop[0]:
                        vc = b._vc
                        saved = ((i, b, vc, vc[0], b if b._node is not None else None),)
                    elif getattr(args[i], "nbytes", 0) >= _MIN_DROP_BYTES:  # unread: its spec (a small array as it is)
                        args[i] = ArraySpec(args[i])
                    if drop[1]:
                        node.ans = [ArraySpec(ans) if getattr(ans, "nbytes", 0) >= _MIN_DROP_BYTES else ans]
                    else:
                        node.ans = [ans]
                        saved += ((-1, None, out._vc, 0, None),)
                    node._saved = saved
                    meta = _METAS.get(ans.shape)  # (_out_meta's common case, inline)
                    node._out_meta = meta if meta is not None and meta[0][1] is ans.dtype else _out_meta(ans)
                    if saved and _hook_state.stack:
                        node._materialize(_hook_state.stack[-1])
                    return out
        return ReverseTrace.process(self, prim, args, kwargs, argnums)

    def unbox(self, prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
        """The Tensors at ``argnums`` become their arrays; returns (argnums, the Tensors). A stale
        view that needs no gradient is refreshed now (one that does, when :meth:`new_node` links it)."""
        boxes = []
        for i in argnums:
            b = args[i]
            boxes.append(b)
            if b._base is not None and b._view_version != b._vc[0] and not b._requires_grad:
                _refresh_view(b)
            args[i] = b._value
        if kwargs:
            for k, v in list(kwargs.items()):
                if isinstance(v, GraphBox):
                    kwargs[k] = v._value
        return argnums, boxes

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
                return _raw_call(prim, args, kwargs)
        try:
            return quiet_run(prim.fast_fn, *args, **kwargs)
        except ValueError as err:
            raise _torch_shape_error(prim, args, err) from None
        except RuntimeError as err:
            if not context_busy(err):
                raise
            return _raw_call(prim, args, kwargs)

    def new_node(self, prim: Primitive, links: Any, argnums: list[Any], kwargs: dict[Any, Any]) -> Any:
        """The call's ``grad_fn`` (of the primitive's PyTorch class), linked to the nodes of the
        inputs that require grad (a leaf's ``AccumulateGrad``); None when grad mode is off or no
        input requires grad."""
        if not (prim.differentiable and _mode.enabled):
            return None
        parents: list[Any] = []
        live: list[int] = []
        for i, b in zip(*links):
            if b._requires_grad:
                if b._base is not None and b._view_version != b._vc[0]:
                    _refresh_view(b)
                node = b._node
                parents.append(get_accumulator(b) if node is None else target(node, b._output_nr))
                live.append(i)
        if not live:
            return None
        node = _new_node(_NODE_CLASS.get(prim) or _node_class(prim))
        node.prim = prim
        node.parents = parents
        node.argnums = live
        node._inputs = argnums
        node.kwargs = kwargs
        if kwargs and not _SAVED_KEYS.issuperset(kwargs):
            _expose_saved(kwargs)
        node.out_index = node.versions = None
        node._seq = _next_seq()
        node._released = False
        return node

    def save_inputs(self, node: Any, args: list[Any], drop_args: tuple[int, ...], links: Any) -> None:
        """Keep the arguments; each Tensor a rule reads gets an entry of ``node._saved`` (its version
        counter and version now: an in-place change before backward is an error). An inference
        tensor may not be saved (PyTorch)."""
        entries = []
        for i, b in zip(*links):
            if i in drop_args:
                continue
            if b._inference:
                raise RuntimeError(_INFERENCE_SAVED)
            vc = b._vc
            node_of = b._node
            has_history = b._requires_grad and node_of is not None and type(node_of) is not AccumulateGrad
            entries.append((i, b, vc, vc[0], b if has_history else None))
        node.args = args
        node._saved = entries  # (new_boxes adds the results' entries and makes it a tuple)

    def new_boxes(self, prim: Primitive, ans: Any, node: Any, links: Any, args: list[Any], kwargs: dict[Any, Any],
                  drop_ans: bool) -> Any:
        """The results as Tensors (NumpyBoxes when every input was one: a rule recorded in create_graph
        mode), a view marked as one of its input; with ``node``, each its ``grad_fn`` and, unless no rule
        reads it, saved."""
        argnums, boxes = links
        tensor_out = False
        for b in boxes:
            if b.__class__ is not NumpyBox:
                tensor_out = True
                break
        make = _TENSOR_CLS[0]._make if tensor_out else NumpyBox._make
        inference = _mode.inference
        is_view = argnums[0] == 0 and prim in VIEW_PRIMITIVES
        if is_view and getattr(ans, "base", None) is not None and (inference or any(b._inference for b in boxes)):
            inference = boxes[0]._inference  # a view is an inference tensor exactly when its base is (PyTorch)
        if prim.multiple_results:
            outs = [make(a if type(a) is np.ndarray else _as_array(a), inference=inference) for a in ans]
        else:
            outs = [make(ans if type(ans) is np.ndarray else _as_array(ans), inference=inference)]
            if is_view:
                _mark_view(outs[0], boxes[0], prim, args, kwargs)
        if node is not None:
            entries = node._saved
            node.ans = ans_saved = []
            for k, o in enumerate(outs):
                v = o._value
                o._node, o._output_nr, o._requires_grad = node, k, True
                if drop_ans:
                    v = ArraySpec(v) if getattr(v, "nbytes", 0) >= _MIN_DROP_BYTES else v
                else:
                    entries.append((~k, None, o._vc, o._vc[0], None))
                ans_saved.append(v)
            node._saved = tuple(entries)
            if len(outs) == 1:
                node._out_meta = _out_meta(outs[0]._value)
            else:
                node._out_meta = tuple(_out_meta(o._value)[0] for o in outs)
            if entries and _hook_state.stack:
                node._materialize(_hook_state.stack[-1])
            if prim.multiple_results:
                node._n_outputs = len(outs)
                node._short_step = False
            if anomaly.enabled:
                node._stack = user_stack()
        return tuple(outs) if prim.multiple_results else outs[0]


TRACE = TensorTrace()

# primitive -> its node class when its calls may take TensorTrace.process's short way, else False
_ONE_TENSOR: dict[Any, Any] = {}


def record(prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
    """Record one call of ``prim`` on Tensors (``args`` at ``argnums``) through the one recording
    path, ``ReverseTrace.process`` of :data:`TRACE`, bypassing ft.func's hook (which calls it)."""
    return ReverseTrace.process(TRACE, prim, args, kwargs, argnums)


def _raw_call(prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> Any:
    """``prim`` on raw values, NumPy's floating-point warnings silenced: straight to ``prim.fast_fn``
    when every argument is a plain array (as ``ReverseTrace.process``), shape errors as PyTorch's."""
    fast = prim.fast_types
    plain = True
    for a in args:
        if type(a) not in fast:
            plain = False
            break
    try:
        if plain:
            try:
                return quiet_run(prim.fast_fn, *args, **kwargs)
            except RuntimeError as err:
                if not context_busy(err):
                    raise
        token = fp_quiet()
        try:
            if plain:
                return prim.fast_fn(*args, **kwargs)
            for b in args:
                if isinstance(b, Box):  # a box of a lower trace (a transform's value)
                    return prim.call(*args, **kwargs)
            return prim.raw(*args, **kwargs)
        finally:
            fp_restore(token)
    except ValueError as err:
        raise _torch_shape_error(prim, args, err) from None


def _out_meta(v: Any) -> tuple[Any, ...]:
    """A node's ``_out_meta`` for its one output ``v``: ((shape, dtype, namespace),), one shared
    tuple per NumPy shape and dtype (fewer objects per node, for the garbage collector to count)."""
    if type(v) is not np.ndarray:
        return ((v.shape, v.dtype, namespace_of(v)),)
    meta = _METAS.get(v.shape)
    if meta is not None and meta[0][1] is v.dtype:
        return meta
    key = (v.shape, v.dtype)
    meta = _METAS_BY_DTYPE.get(key)
    if meta is None:
        if len(_METAS_BY_DTYPE) > 4096:  # (bounded: shapes may vary without end)
            _METAS_BY_DTYPE.clear()
            _METAS.clear()
        meta = _METAS_BY_DTYPE[key] = ((v.shape, v.dtype, np),)
    _METAS[v.shape] = meta
    return meta


# the metas of NumPy outputs: by (shape, dtype), and the last one used per shape (looked up
# first: a shape's hash is cheaper than a dtype's, and a shape mostly comes in one dtype)
_METAS_BY_DTYPE: dict[Any, tuple[Any, ...]] = {}
_METAS: dict[Any, tuple[Any, ...]] = {}
NO_KWARGS: dict[str, Any] = {}  # keyword arguments of a call with none, shared by its nodes (never written to)
ONE_ARG = [0]  # argnums of a call of one argument, shared by its nodes (never written to)


def _node_class(prim: Primitive) -> type:
    """The node class of ``prim``'s calls, named as PyTorch names it."""
    cls = _NODE_CLASS[prim] = named_node_class(PrimNode, torch_name(prim))
    return cls


_NODE_CLASS: dict[Any, type] = {}  # primitive -> _node_class(primitive)


def save(box: GraphBox, is_output: bool = False, output_nr: int = 0, owner: Any = None) -> "SavedTensor":
    """A :class:`SavedTensor` of ``box`` (an input of its node, or output ``output_nr`` of ``owner``),
    packed at once by the innermost saved-tensor hooks if any."""
    if is_output:
        desc = (owner._name, output_nr) if owner is not None else None
    else:
        node = box._node
        desc = (node._name, box._output_nr) if node is not None and type(node) is not AccumulateGrad else None
    s = SavedTensor(box._value, None if is_output else box, box._vc, box._vc[0], is_output, output_nr, desc)
    if _hook_state.stack:
        s._pack_now(_hook_state.stack[-1], box)
    return s


def _as_array(a: Any) -> Any:
    """A NumPy scalar or Python number as a 0-d array; anything else as it is."""
    if isinstance(a, (np.generic, int, float, complex, bool)):
        return np.asarray(a)
    return a


def _mark_view(out: GraphBox, src: GraphBox, prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> None:
    a, o = primal_value(src._value), primal_value(out._value)  # dual tensors view their primal's memory
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


# --------------------------------------------------------------------------
# saved-tensor hooks


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
