"""In-place NumPy code under the transforms: ``a[i] = v``, ``a += b``, ``out=``.

A traced array is a box; an in-place write rebinds the box, in place, to a
functional update of itself (``fnp.at(a)[i].set(v)``), so every reference to
that box sees the new value and derivatives stay exact to any order. Nothing
is written into the underlying arrays: arrays the user passed in are never
mutated.

Views are honoured as NumPy honours them. A box made from another by basic
indexing, ``.T``/``transpose``, ``reshape``, ``ravel``, ``swapaxes``,
``moveaxis``, ``squeeze`` or ``expand_dims`` remembers its base:

* writing into the base makes the view stale; the view is refreshed from the
  base the next time it is used (``row = a[0]; a[0] = v; row`` sees ``v``);
* writing into the view writes through to the base (``a[0][1] = v``).

Inside a transform, ``fnp.zeros`` and the other creation functions return a
constant box (see :mod:`funcgrad.core.constant`) so that code such as
``J = fnp.zeros((n, n)); J[i] = f(x[i])`` works unchanged. Plain NumPy arrays
(``np.zeros``) keep NumPy's semantics and cannot hold traced values: writing
one into them raises an error that says so.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar, cast

from typing_extensions import ParamSpec

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box
from ..core.constant import CONSTANT, ConstBox, constant_box
from ._util import dtype, shape

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["ViewInfo", "InPlaceMethods", "ConstMethods", "view_function", "creation_function"]

_OPTIONAL_SLOTS = ("_node", "_tangent", "_bdim")


class ViewInfo:
    """How a box views its ``base``: ``forward(base)`` reads the view,
    ``backward(base, view)`` returns the base with the view written back."""

    __slots__ = ("base", "forward", "backward", "version")

    def __init__(self, base: Box, forward: Callable[..., Any], backward: Callable[..., Any]):
        self.base = base
        self.forward = forward
        self.backward = backward
        self.version = base._version

    def sync(self, view: Box) -> None:
        """Refresh ``view`` if its base was written since the view last looked."""
        base = self.base
        if base._view is not None:
            base._view.sync(base)
        if base._version != self.version:
            self.version = base._version
            _rebind(view, self.forward(base))


def _rebind(box: Box, new: Any) -> None:
    """Make ``box`` hold ``new`` (a box of any trace, or a plain array), keeping its identity."""
    if isinstance(new, Box):
        if new._view is not None:
            new._view.sync(new)
        box.__class__ = type(new)
        box._value = new._value
        box._trace = new._trace
        for slot in _OPTIONAL_SLOTS:
            try:
                setattr(box, slot, getattr(new, slot))
            except AttributeError:
                pass
    else:
        box.__class__ = ConstBox
        box._value = new
        box._trace = CONSTANT


def _snapshot(box: Box) -> Box:
    """A frozen copy of ``box``'s current state (same trace, value and node)."""
    old = object.__new__(type(box))
    old._value = box._value
    old._trace = box._trace
    for slot in _OPTIONAL_SLOTS:
        try:
            setattr(old, slot, getattr(box, slot))
        except AttributeError:
            pass
    old._view = None
    old._version = box._version
    return old


def _write(box: Box, new: Any) -> None:
    """Replace the whole value of ``box`` and write it through to any base it views.

    Tape nodes of enclosing traces may have saved ``box`` itself; its state
    before the write is kept in ``box._history`` for them (see VJPNode.check_versions).
    """
    view = box._view
    if type(box) is not ConstBox:  # nodes save a constant box's array, never the box
        history = getattr(box, "_history", None)
        if history is None:
            history = box._history = {}
        history[box._version] = _snapshot(box)
    _rebind(box, new)
    box._version += 1
    if view is not None:
        base = view.base
        _write(base, view.backward(base, box))
        view.version = base._version


def _sync(box: Any) -> None:
    if isinstance(box, Box) and box._view is not None:
        box._view.sync(box)


# --- item assignment and augmented operators --------------------------------

def _setitem(self: Box, idx: Any, value: Any) -> None:
    _sync(self)
    _sync(value)
    _write(self, fnp.at(self)[idx].set(value))


def _write_all(self: Box, result: Any) -> None:
    """``out=self``: NumPy's ``out[...] = result``."""
    _setitem(self, Ellipsis, result)


def _check_inplace_result(target: Box, result: Any, op: str) -> Any:
    if shape(result) != shape(target):
        raise ValueError(
            f"non-broadcastable output operand with shape {shape(target)} doesn't match the "
            f"broadcast shape {shape(result)} of in-place {op}"
        )
    want, got = dtype(target), dtype(result)
    if want != got:
        if not np.can_cast(got, want, casting="same_kind"):
            raise TypeError(
                f"in-place {op} cannot cast the result from {got} to the array's dtype {want} "
                f"(NumPy's same_kind rule); use a = a {op.rstrip('=')} b to get a new array instead"
            )
        result = fnp.astype(result, want)
    return result


def _augmented(name: str, symbol: str) -> Callable[..., Any]:
    """``a <symbol> b`` on a traced ``a``: rebind ``a`` to ``fnp.<name>(a, b)``."""
    def inplace(self: Box, other: Any) -> Box:
        _sync(self)
        _sync(other)
        _write(self, _check_inplace_result(self, getattr(fnp, name)(self, other), symbol))
        return self

    inplace.__name__ = f"__i{name}__"
    return inplace


# --- views ----------------------------------------------------------------------

def _is_basic_index(idx: Any) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, slice):
            continue
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            continue
        return False
    return True


def _as_view(base: Any, out: Any, forward: Callable[..., Any], backward: Callable[..., Any]) -> Any:
    if not isinstance(base, Box):
        return out
    if not isinstance(out, Box):
        out = ConstBox(out)
    out._view = ViewInfo(base, forward, backward)
    return out


def _getitem(self: Box, idx: Any) -> Any:
    _sync(self)
    out = fnp.indexing.getitem(self, idx)
    if not _is_basic_index(idx):
        return out  # advanced indexing copies, as in NumPy
    return _as_view(self, out, lambda b: fnp.indexing.getitem(b, idx), lambda b, v: fnp.at(b)[idx].set(v))


def _layout_view(fn: Callable[..., Any], inverse: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a layout function (reshape, transpose ...) so that its result views its input."""

    def viewing(x: Any, *args: Any, **kwargs: Any) -> Any:
        out = fn(x, *args, **kwargs)
        if not isinstance(x, Box):
            return out
        base_shape = shape(x)
        return _as_view(
            x, out, lambda b: fn(b, *args, **kwargs), lambda b, v: inverse(v, base_shape, *args, **kwargs)
        )

    viewing.__name__ = getattr(fn, "__name__", "view")
    viewing.__qualname__ = viewing.__name__
    viewing.__doc__ = getattr(fn, "__doc__", None)
    viewing.__wrapped__ = fn  # type: ignore[attr-defined]
    return viewing


def _inverse_perm(axes: Any, nd: int) -> tuple[Any, ...]:
    if axes is None:
        return tuple(reversed(range(nd)))
    axes = [a % nd for a in axes]
    return tuple(int(i) for i in np.argsort(axes))


def _reshape_back(v: Any, base_shape: tuple[Any, ...], *args: Any, **kwargs: Any) -> Any:
    order = kwargs.get("order", "C")
    return fnp.reshape(v, base_shape, order=order) if order != "C" else fnp.reshape(v, base_shape)


def _transpose_back(v: Any, base_shape: tuple[Any, ...], axes: Any = None, **kwargs: Any) -> Any:
    return fnp.transpose(v, _inverse_perm(axes, len(base_shape)))


def _swapaxes_back(v: Any, base_shape: tuple[Any, ...], a: int, b: int) -> Any:
    return fnp.swapaxes(v, a, b)


def _moveaxis_back(v: Any, base_shape: tuple[Any, ...], source: Any, destination: Any) -> Any:
    return fnp.moveaxis(v, destination, source)


# --- creation inside transforms ------------------------------------------------

def _creating(fn: Callable[..., Any]) -> Callable[..., Any]:
    def create(*args: Any, **kwargs: Any) -> Any:
        return constant_box(fn(*args, **kwargs))

    create.__name__ = getattr(fn, "__name__", "create")
    create.__qualname__ = create.__name__
    create.__doc__ = getattr(fn, "__doc__", None)
    create.__wrapped__ = fn  # type: ignore[attr-defined]
    return create


# --- constant boxes behave like plain arrays for conversions ---------------------

def _const_float(self: ConstBox) -> float:
    return float(self._value)


def _const_complex(self: ConstBox) -> complex:
    return complex(self._value)


def _const_item(self: ConstBox, *args: Any) -> Any:
    return self._value.item(*args) if hasattr(self._value, "item") else self._value


def _const_tolist(self: ConstBox) -> Any:
    return self._value.tolist() if hasattr(self._value, "tolist") else self._value


class InPlaceMethods:
    """In-place behaviour of traced arrays (registered on every box by funcgrad.numpy)."""

    __setitem__ = _setitem
    __getitem__ = _getitem
    _write_all = _write_all
    __iadd__ = _augmented("add", "+=")
    __isub__ = _augmented("subtract", "-=")
    __imul__ = _augmented("multiply", "*=")
    __itruediv__ = _augmented("divide", "/=")
    __ifloordiv__ = _augmented("floor_divide", "//=")
    __imod__ = _augmented("mod", "%=")
    __ipow__ = _augmented("power", "**=")
    __imatmul__ = _augmented("matmul", "@=")

    def flatten(self, order: str = "C") -> Any:
        return fnp.copy(fnp.ravel(self, order=order))  # a copy, as in NumPy


class ConstMethods:
    """Constant boxes convert like the plain arrays they hold."""

    __float__ = _const_float
    __complex__ = _const_complex
    item = _const_item
    tolist = _const_tolist


def view_function(fn: Callable[P, R], inverse: Callable[..., Any]) -> Callable[P, R]:
    """``fn`` (reshape, transpose ...) made view-aware: its result on a traced array views it."""
    out = _layout_view(fn, inverse)
    out.__module__ = fn.__module__
    if hasattr(fn, "primitive"):
        out.primitive = fn.primitive  # type: ignore[attr-defined]
    return cast("Callable[P, R]", out)


def creation_function(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` (zeros, ones, array ...) returning a constant box inside a transform, so that
    in-place writes of traced values into the result work."""
    out = _creating(fn)
    out.__module__ = fn.__module__
    if hasattr(fn, "primitive"):
        out.primitive = fn.primitive  # type: ignore[attr-defined]
    return cast("Callable[P, R]", out)
