"""Recorded values: ``GraphBox`` (an array, the node that made it, a version counter; ``Tensor``
derives from it) and ``NumpyBox`` (the same with NumPy's methods, what derivative rules see in
create_graph mode); where a box's gradient goes (``edge_of``, a leaf's accumulator); and how a
view's history follows its base after an in-place change (``replay_view``, ``_refresh_view``).

Example::

    b = as_numpy_box(t)              # the same value, node and version counter, NumPy's methods
"""

from __future__ import annotations

import collections
import weakref
from typing import Any, Callable, TypeVar, cast

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box
from .dual_trace import is_dual
from .grad_mode import enable_grad
from .grad_mode import state as _mode
from .nodes import AccumulateGrad
from .tensor_class import _TENSOR_CLS
from .torch_names import named, view_rebase_error

__all__ = ["GraphBox", "NumpyBox", "as_numpy_box", "as_tensor_box", "edge_of", "get_gradient_edge", "get_accumulator",
           "register_trace", "replay_view", "fresh_view", "move_retain"]


_new = object.__new__
_IGNORE_ONE: Callable[[Any], None] = collections.deque(maxlen=0).append  # f(x) -> None, keeping nothing
_IGNORE_TWO = cast("Callable[[Any, Any], None]", slice)  # f(x, y) -> a slice, for a setter (its result is ignored)
_B = TypeVar("_B", bound="GraphBox")

# The tensor trace every GraphBox belongs to (tensor_trace.py registers it when it is made).
TRACE: Any = None


def register_trace(trace: Any) -> None:
    """Called once by ``tensor_trace.py``: the trace of the boxes :meth:`GraphBox._make` makes."""
    global TRACE
    TRACE = trace


class GraphBox(Box):
    """A recorded value: the array, the node that made it, a version counter.

    ``Tensor`` (the user's object, PyTorch methods) and ``NumpyBox`` (NumPy
    methods, what derivative rules see in create_graph mode) both derive from it.
    """

    # ``_node`` is the Box slot; these are the Tensor layer's own.
    __slots__ = ("_output_nr", "_requires_grad", "_version_counter", "_base", "_view_fns", "_view_version", "_inference")
    _node: Any  # this layer's nodes.Node (core's Box declares a VJPNode)
    _output_nr: int
    _requires_grad: bool
    _version_counter: list[int]  # the version counter, shared by a tensor and its views
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
        return self._version_counter[0]

    @_version.setter
    def _version(self, value: int) -> None:
        self._version_counter[0] = value

    @classmethod
    def _make(cls: type[_B], value: Any, node: Any = None, output_nr: int = 0, requires_grad: bool = False,
              vc: list[Any] | None = None, inference: bool = False) -> _B:
        b: _B = _new(cls)
        b._value = value
        b._trace = TRACE
        b._node = node
        b._output_nr = output_nr
        b._requires_grad = requires_grad
        b._version_counter = [0] if vc is None else vc
        b._base = None
        b._view_fns = None
        b._view_version = 0
        b._inference = inference
        return b

    def _graph(self) -> tuple[Any, ...]:
        """(node, output_nr) of this value for recording; refreshes a stale view first."""
        if self._base is not None and self._view_version != self._version_counter[0]:
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
    if b._base is not None and b._view_version != b._version_counter[0]:
        _refresh_view(b)  # (GraphBox._graph, inline)
    n: Any = _new(NumpyBox)  # (NumpyBox._make, inline: a call per Tensor argument of the nn bridge)
    n._value = b._value
    n._trace = TRACE
    node = n._node = b._node
    n._output_nr = b._output_nr
    n._requires_grad = b._requires_grad
    n._version_counter = b._version_counter
    n._base = None
    n._view_fns = None
    n._view_version = 0
    n._inference = b._inference
    if node is None and b._requires_grad:  # a leaf: gradients go to its accumulator
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
        t: Any = _new(T)  # (GraphBox._make, inline: a call per result of the nn bridge)
        t._value = b._value
        t._trace = TRACE
        t._node = b._node
        t._output_nr = b._output_nr
        t._requires_grad = b._requires_grad
        t._version_counter = b._version_counter
        t._base = None
        t._view_fns = None
        t._view_version = 0
        t._inference = b._inference
        return t
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


def _as_array(a: Any) -> Any:
    """A NumPy scalar or Python number as a 0-d array; anything else as it is."""
    if isinstance(a, (np.generic, int, float, complex, bool)):
        return np.asarray(a)
    return a


def replay_view(x: Any, view_fns: tuple[Any, ...], raw: bool, cotangent: bool = False) -> Any:
    """Apply a recorded chain of view operations to ``x`` (a base-shaped array or box). With
    ``cotangent``, ``x`` is a cotangent of the base and ``imag`` also flips the sign (funcgrad's
    complex cotangents follow JAX: that of ``x + iy`` is ``ct_x - i ct_y``)."""
    for prim, rest, kwargs in view_fns:
        if cotangent and prim.name == "view_as_real":  # (re, im) of the value: (ct_x, ct_y) = (Re, -Im) of ct
            x = fnp.conj(x)
        x = (prim.raw if raw else prim.call)(x, *rest, **kwargs)
        if cotangent and prim.name in ("imag", "view_as_complex"):
            x = -x if prim.name == "imag" else fnp.conj(x)
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
    t._view_version = t._version_counter[0]
    old = t._node, t._output_nr
    if t._base._requires_grad:
        # (as_strided cannot change the dtype: a chain reading memory as another dtype keeps its ops' names)
        reread = any(prim.name in ("view_as_real", "view_as_complex") for prim, _, _ in t._view_fns)
        w = fresh_view(t._base, t._view_fns, None if reread else "AsStridedBackward0")
        t._node, t._output_nr, t._requires_grad = w._node, w._output_nr, True
    elif t._node is not None:
        t._node, t._requires_grad = None, False
    # (else: a view that was made a leaf with requires_grad_() stays one, as in PyTorch)
    move_retain(t, *old)


def fresh_view(base: GraphBox, view_fns: tuple[Any, ...], name: str | None = None) -> Any:
    """Record ``view_fns`` afresh on ``base``'s current history (new nodes, no hooks); the last
    one's node of PyTorch's class ``name`` if given. (Not named by an op being recorded now, whose
    primitive it may call: the refresh of a stale view it reads.)"""
    outer, _mode.name_request = _mode.name_request, None
    try:
        with enable_grad():
            if name is None:
                return replay_view(as_numpy_box(base), view_fns, raw=False)
            x = replay_view(as_numpy_box(base), view_fns[:-1], raw=False)
            prim, rest, kwargs = view_fns[-1]
            return named(name, prim.call, prim)(x, *rest, **kwargs)
    finally:
        _mode.name_request = outer


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
