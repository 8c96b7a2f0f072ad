"""What a node saves for backward: ``SavedTensor`` (the array, its version counter and version
when saved, saved-tensor hooks' pack/unpack), made by custom Functions through :func:`save` and
by a primitive's node on demand; ``intact`` checks a node's saved versions.

Example::

    y = x.exp()
    y.grad_fn._raw_saved_result      # a SavedTensor
"""

from __future__ import annotations

from typing import Any, Callable

from ..backend import namespace_of
from .boxes import GraphBox, NumpyBox, as_numpy_box, edge_of
from .grad_mode import no_grad
from .nodes import AccumulateGrad, Node
from .saved_hooks import _hook_state
from .tensor_class import _TENSOR_CLS
from .torch_names import _FREED, _short_name, _strip_backward, _type_desc

__all__ = ["SavedTensor", "save", "intact"]


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
