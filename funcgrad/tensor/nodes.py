"""The backward graph's nodes: ``Node`` (PyTorch's ``torch.autograd.graph.Node``, a kind of the
engine's ``VJPNode``), a leaf's ``AccumulateGrad``, the tape node of one output of a node of
several, hook handles, and what a node records of its outputs (``_out_meta``).

Example::

    y = (x * 2).sum()
    y.grad_fn.name()                 # 'SumBackward0'
    y.grad_fn.next_functions         # ((<MulBackward0 ...>, 0),)
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, cast

import numpy as np

from ..backend import namespace_of
from ..core.reverse import VJPNode
from .torch_names import named_node_class

__all__ = ["Node", "AccumulateGrad", "JoinedOutputs", "join_outputs", "OutputNode", "RemovableHandle", "register_node_call", "target", "public_edge"]


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
    # run even when every gradient reaching it is undefined (a custom Function's backward, as in PyTorch);
    # other nodes then pass None on without running
    _runs_on_undefined = False
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
        edges = [e if e is not None else (None, 0) for e in self._edges]
        slots = _WRAPPED_NUMBER_SLOTS.get(self._name)
        if slots is None or self.args is None or len(edges) != 1:
            return tuple(edges)
        # PyTorch wraps a Python number operand of these ops in a tensor: its edge is (None, 0)
        number = [p for p in slots if p not in self._inputs and p < len(self.args)
                  and isinstance(self.args[p], (int, float, complex))]
        if not number:
            return tuple(edges)
        before = self._name == "WhereBackward0" and number[0] < self._inputs[0]  # where keeps its order
        return ((None, 0), edges[0]) if before else (edges[0], (None, 0))

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


# the binary ops whose Python number operand PyTorch lists in next_functions, and their two operand positions
# (a reflected ``2 * x`` is ``mul(x, 2)`` there: the tensor first)
_WRAPPED_NUMBER_SLOTS = {name: (0, 1) for name in ("MulBackward0", "AddBackward0", "SubBackward0", "DivBackward0")}
_WRAPPED_NUMBER_SLOTS["WhereBackward0"] = (1, 2)


class JoinedOutputs(Node):
    """One node for outputs computed apart that PyTorch makes with one op (``var_mean`` ...):
    the gradient of output k passes unchanged to the node that computed it."""

    def __init__(self, edges: list[tuple[Any, int]], values: list[Any], name: str):
        super().__init__(range(len(edges)), edges)
        self._name = name
        self._n_outputs = len(edges)
        self._out_meta = self.ans = tuple(_out_meta(v)[0] for v in values)  # (the walk sizes its slots by ans)

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        return list(grads)


def join_outputs(outs: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    """Give tensors computed apart the one node (``name``, output k each) that PyTorch's single
    op has, so hooks see them together: a pre hook gets ``(grad_0, grad_1, ...)``, and a tensor
    hook of an output that no gradient reached runs with None when the node runs."""
    if not all(o._node is not None and o._requires_grad for o in outs):
        return outs  # nothing recorded (no grad mode, no input requiring grad), or traced by ft.func
    cls = named_node_class(JoinedOutputs, name)  # type(grad_fn).__name__ is PyTorch's name too
    node = cls([(o._node, o._output_nr) for o in outs], [o._value for o in outs], name)
    for k, o in enumerate(outs):
        o._node, o._output_nr = node, k
    return outs


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


def _zeros(meta: tuple[Any, ...]) -> Any:
    shape, dtype, ns = meta
    return ns.zeros(shape, dtype=dtype)


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
