"""``PrimNode``: the node of one recorded call of a funcgrad primitive (``MulBackward0`` ...), whose
backward runs the primitive's VJP rules on what it saved; PyTorch's ``_saved_<name>`` and
``_raw_saved_<name>`` attributes of it.

Example::

    y = x * w
    y.grad_fn._saved_other           # w, as saved (its version checked)
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any, Callable

from ..core import Primitive
from ..core.reverse import ArraySpec, dropped
from .nodes import Node, _zeros, public_edge
from .saved_tensors import _RELEASED, SavedTensor, intact
from .torch_names import _DEFAULT_ARG_NAMES, _FREED, ARG_NAMES, arg_names
from .torch_saved import TORCH_ONLY_KEYS, TORCH_SAVED_NODES, as_saved_value, torch_saved_value

__all__ = ["PrimNode"]


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
        if self._released and _reads_index_arrays(self):
            raise RuntimeError(_FREED)  # PyTorch saves index and mask arrays, and frees them
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
        if not raw and self._name in TORCH_SAVED_NODES:  # PyTorch's view of a number operand (torch_saved.py)
            found, value = torch_saved_value(self, key)
            if found:
                return value
        entry = self._lookup_saved(key)
        if type(entry) is SavedTensor:  # (a freed one raises in unpack)
            return entry if raw else entry.unpack(self, numpy_box=False)
        if entry is not None and not raw:
            return as_saved_value(entry)
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
        keys += TORCH_SAVED_NODES.get(self._name, ())
        extra = [f"_{raw}saved_{key}" for key in keys for raw in ("", "raw_")]
        own = [n for n in super().__dir__() if not n.startswith(("_saved_", "_raw_saved_"))]
        return sorted(set(own + extra))


_SAVES_WRAPPED_NUMBER = frozenset({"MulBackward0", "DivBackward0"})  # add/sub rules do not read the number


def _reads_index_arrays(node: PrimNode) -> bool:
    """Whether ``node`` holds integer or boolean arrays among its constant arguments (the index of
    ``x[[1, 1]]``, the mask of ``where``): PyTorch saves those as tensors, so a second backward
    through the node without ``retain_graph`` raises there, and so it does here. The same holds for
    the Python number of ``x * 2`` and ``x / 2``: PyTorch wraps it in a tensor that its rule saves."""
    constants = [a for i, a in enumerate(node.args) if i not in node._inputs]
    if node._name in _SAVES_WRAPPED_NUMBER and any(isinstance(a, (int, float, complex)) for a in constants):
        return True
    constants += list(node.kwargs.values()) if node.kwargs else []
    while constants:
        a = constants.pop()
        if isinstance(a, (tuple, list)):
            constants.extend(a)
        elif getattr(a, "ndim", 0) > 0 and getattr(a, "dtype", None) is not None and a.dtype.kind in "biu":
            return True
    return False


_SAVED_KEYS: set[str] = set()


def _expose_saved(keys: Any) -> None:
    """PrimNode's ``_saved_<key>``/``_raw_saved_<key>`` as properties (once each; keyword names as they are
    recorded): a ``__getattr__``'s mere presence would make every attribute read of every node slower."""
    for key, raw in itertools.product(set(keys) - _SAVED_KEYS, (False, True)):
        setattr(PrimNode, f"_{'raw_' * raw}saved_{key}", property(partial(PrimNode._read_saved, key=key, raw=raw)))
    _SAVED_KEYS.update(keys)


# PyTorch's names of saved values (what a node saves is its primitive's ``reads``)
_expose_saved([*_DEFAULT_ARG_NAMES, *sum(ARG_NAMES.values(), []), "result", *TORCH_ONLY_KEYS,
               *(f"{p}{k}" for p in ("result", "arg") for k in range(32))])
