"""What eager-mode constructs mean inside ``ft.func`` (torch.func's rules), on traced values.

Inside an ``ft.func`` transform a Tensor holds the transform's traced value (a core ``Box``). The
Tensor layer's own ways of stopping or replacing gradients act on its eager graph; here they are
given their meaning for the transforms, as torch.func gives them:

* ``detach()`` / ``.data``: the value with no derivative for any transform (``fg.stop_gradient``);
  batching (vmap) is kept.
* ``no_grad()`` inside the transformed function: the results of operations run in it carry no
  derivative for the reverse-mode transforms (grad, vjp, jacrev) entered before it; forward mode
  (jvp, jacfwd) ignores it, as PyTorch's forward AD does. Each reverse-mode transform turns grad
  mode on for the function it runs, so a ``no_grad`` outside the transform is ignored; one entered
  between two nested transforms stops the outer one (the inner transform's results are then
  constants for it).
* In-place operations (``y[0] = v``, ``add_``, ``copy_`` ...) on a tensor holding a traced value
  rebind the tensor to a functional update of its value; a write through a view updates its base
  (and the base's other views), so derivatives are exact. Nothing is written into memory.
* A custom ``ft.autograd.Function`` becomes one primitive whose derivative rules are the
  Function's ``backward`` (reverse mode), ``jvp`` (forward mode) and ``vmap`` (batching), as
  torch.func does for Functions written with ``setup_context`` (:mod:`._func_function`).

``ft.func`` opens a :class:`Frame` per call of the user's function. While a frame is open (in any
thread) the tensor trace is a :class:`FuncTransformTrace`, whose ``process`` does the above around
the one recording path; eager code, outside every frame, pays nothing for it.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from .. import tree_util
from ..backend import namespace_of
from ..core import Box, JVPBox as _JVPBox, VJPBox as _VJPBox, defprimitive
from ..core.constant import ConstBox as _ConstBox
from ..core.trace import current_traces, shape_of, unbox_all
from .dual_trace import is_dual, primal_value
from . import boxes as _boxes
from . import tensor_trace as _trace
from . import views as _views
from .tensor_class import _TENSOR_CLS, is_tensor
from .grad_mode import state as _mode

__all__ = ["Frame", "enter", "leave", "depth", "is_traced", "stop_reverse", "stop_all", "detach", "traced_inplace",
           "check_requires_grad", "check_backward", "check_data_set"]


# --------------------------------------------------------------------------
# frames: one per call of the user's function by an ft.func transform


class Frame:
    """One call of the user's function by an ``ft.func`` transform (``reverse``: grad, vjp, jacrev)."""

    __slots__ = ("trace", "reverse", "prev_enabled", "written")

    def __init__(self, reverse: bool) -> None:
        stack = current_traces()
        self.trace = stack[-1] if stack else None  # the transform's own trace (innermost when it calls us)
        self.reverse = reverse
        self.prev_enabled = _mode.enabled
        # tensors from outside this call that it rebound (in-place writes): (weakref, value before)
        self.written: list[tuple[Any, Any]] = []


class _Local(threading.local):
    frames: list[Frame]

    def __init__(self) -> None:
        self.frames = []


_local = _Local()
_open = [0]  # frames open in all threads (the tensor trace is a FuncTransformTrace while > 0)
_open_lock = threading.Lock()


def depth() -> int:
    """How many ft.func transforms are running a user function in this thread (nesting)."""
    return len(_local.frames)


def enter(reverse: bool) -> Frame:
    """Open a frame; a reverse-mode transform turns grad mode on for the function (torch.func)."""
    frame = Frame(reverse)
    _local.frames.append(frame)
    with _open_lock:
        _open[0] += 1
        _trace.TRACE.__class__ = FuncTransformTrace
    if reverse:
        _mode.enabled = True
    return frame


def leave(frame: Frame, ok: bool) -> None:
    """Close ``frame`` (restoring grad mode). With ``ok`` (the function returned and its outputs were
    converted), a tensor from outside the call that it wrote in place is an error, as in torch.func."""
    if frame in _local.frames:
        _local.frames.remove(frame)
    _mode.enabled = frame.prev_enabled
    with _open_lock:
        _open[0] -= 1
        if _open[0] <= 0:
            _open[0] = 0
            _trace.TRACE.__class__ = _trace.TensorTrace
    if frame.written:
        _check_captured(frame, ok)


def _check_captured(frame: Frame, ok: bool) -> None:
    if any(ref() is not None for ref, _ in frame.written):
        gc.collect()  # tensors of the call kept alive only by reference cycles (none held here meanwhile)
    alive = [(ref(), old) for ref, old in frame.written if ref() is not None]
    frame.written = []
    if not alive:
        return
    for t, old in reversed(alive):  # no traced value may stay in a tensor the caller holds
        t._value = old
    if ok:
        raise RuntimeError(
            "During a grad (vjp, jvp, grad, vmap, etc) transform, the function provided attempted to call an in-place "
            "operation that would mutate a captured Tensor (one created outside the function being transformed). "
            "This is not supported; please rewrite the function being transformed to explicitly accept the mutated "
            "Tensor(s) as inputs, or write into a tensor created inside it (e.g. y = x.clone(); y[0] = v).")


def is_traced(v: Any) -> bool:
    """True for a transform's traced value (not a forward-AD dual of ``ft.autograd.forward_ad``)."""
    return isinstance(v, Box) and not is_dual(v)


def _raw_value(t: Any) -> Any:
    """The raw value inside ``t`` (a Tensor op on a traced value may wrap a Tensor around it again)."""
    Tensor = _TENSOR_CLS[0]
    while isinstance(t, Tensor):
        t = t._value
    return t


# --------------------------------------------------------------------------
# no_grad: a primitive with a zero VJP and the identity as JVP


def _keep(x: Any) -> Any:
    return x


def _stop_batch(args: list[Any], dims: list[Any]) -> tuple[Any, Any]:
    return _stop_reverse(args[0]), dims[0]  # the inner value may be traced by enclosing transforms


def _stop_jvp(t: Any, ans: Any, x: Any) -> Any:
    return _stop_reverse(t)  # the tangent passes, as a constant for reverse mode too (jacrev of jacfwd)


_stop_reverse = defprimitive(
    _keep, name="no_grad_stop", vjp=lambda g, ans, x: None, jvp=_stop_jvp,
    batch=_stop_batch, reads={0: ()},
    doc="``x`` with no derivative for reverse mode (its VJP is zero); forward mode and batching see through it.",
)


def stop_reverse(tree: Any) -> Any:
    """The values of ``tree`` with their reverse-mode derivatives stopped (forward mode and vmap kept).

    Example: ``stop_reverse(t._value)`` inside ``ft.func.grad`` is a constant for grad, not for jvp.
    """
    return tree_util.tree_map(lambda v: _stop_reverse(v) if is_traced(v) else v, tree)


class FuncTransformTrace(_trace.TensorTrace):
    """The tensor trace while an ``ft.func`` frame is open (in any thread): the same steps; around
    them, a Tensor operation of a frame's thread marks views of traced values and stops the
    reverse-mode derivatives of results computed in a no_grad block. ``enter`` installs it as the
    class of ``tensor_trace.TRACE`` and the last ``leave`` takes it away, so eager code never
    runs this.
    """

    __slots__ = ()

    def process(self, prim: Any, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
        if not _local.frames:  # an eager operation of another thread
            return super().process(prim, args, kwargs, argnums)
        return _on_op(super().process, prim, args, kwargs, argnums)


def _on_op(record: Callable[..., Any], prim: Any, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
    """A Tensor operation of a thread running an ft.func frame: ``record`` (the tensor trace's
    recording path), views of traced values marked, reverse-mode derivatives of results computed
    in a no_grad block stopped."""
    src = args[argnums[0]]
    traced = any(is_traced(args[i]._value) for i in argnums) or any(
        isinstance(v, Box) and is_traced(getattr(v, "_value", None)) for v in kwargs.values())
    out = record(prim, args, kwargs, argnums)
    if not traced:
        if getattr(out, "_base", None) is not None and is_tensor(out):
            _follow(out._base, out, out._view_fns, "view")  # an eager view: a traced write may come later
        return out
    if argnums[0] == 0 and prim in _views.VIEW_PRIMITIVES and not prim.multiple_results and is_traced(src._value) \
            and is_tensor(src) and is_tensor(out) \
            and _is_view_call(prim, args):
        _mark_traced_view(out, src, prim, args, kwargs)
    if prim.name.lstrip("_") == "broadcast_to" and is_tensor(out) \
            and tuple(shape_of(out._value)) != tuple(shape_of(src._value)):
        out.__dict__[_EXPANDED] = True  # (its elements share memory in PyTorch: in-place writes are refused)
    if not _mode.enabled:
        for o in (out if prim.multiple_results else (out,)):
            if is_traced(o._value):
                o._value = _stop_reverse(o._value)
    return out


# --------------------------------------------------------------------------
# views and in-place writes on traced values

_VIEWS = "_fg_func_views"  # on a root tensor: what follows its value, [(weakref, view_fns, kind, level)]
_ALIAS = "_fg_func_alias"  # on a detach()/.data tensor of a traced one: (that tensor, kind, level)
_NOT_WRITABLE = ("real", "imag", "broadcast_to")
_EXPANDED = "_fg_func_expanded"  # on a tensor made by expand / broadcast_to of a traced value
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")


def _is_view_call(prim: Any, args: list[Any]) -> bool:
    if prim.name in ("_getitem", "getitem"):
        from ..numpy.inplace import _is_basic_index

        return len(args) == 2 and _is_basic_index(args[1])
    return True


def _follow(root: Any, t: Any, view_fns: tuple[Any, ...], kind: str, level: Any = None) -> None:
    entries = root.__dict__.setdefault(_VIEWS, [])
    if len(entries) >= 32 and len(entries) & (len(entries) - 1) == 0:  # (a long-lived root: drop dead views)
        entries[:] = [e for e in entries if e[0]() is not None]
    entries.append((weakref.ref(t), view_fns, kind, level))


def _mark_traced_view(out: Any, src: Any, prim: Any, args: list[Any], kwargs: dict[Any, Any]) -> None:
    root = src._base if src._base is not None else src
    out._base = root
    out._version_counter = src._version_counter
    out._view_fns = (src._view_fns or ()) + ((prim, tuple(args[1:]), dict(kwargs)),)
    out._view_version = src._version_counter[0]
    _follow(root, out, out._view_fns, "view")


def _scatter(base: Any, view_fns: tuple[Any, ...], new: Any) -> Any:
    """``base`` with the region that ``view_fns`` select replaced by ``new`` (a functional update)."""
    for prim, _, _ in view_fns:
        if prim.name in _NOT_WRITABLE:
            if prim.name == "broadcast_to":
                raise RuntimeError(_OVERLAP)
            raise NotImplementedError(
                f"ft.func: an in-place write through a .{prim.name} view of a traced tensor is not supported; write "
                f"the complex tensor itself (e.g. z = ft.complex(new_real, z.imag))")
    shape = tuple(shape_of(base))
    n = int(np.prod(shape, dtype=np.int64))
    # which base elements the view shows: shapes only, so computed on the host (no device sync)
    idx = _boxes.replay_view(np.arange(n).reshape(shape), view_fns, raw=True)
    flat = idx.ravel()
    if np.unique(flat).size != flat.size:
        raise RuntimeError(_OVERLAP)
    ns = namespace_of(unbox_all(base))
    if ns is not np:
        flat = ns.asarray(flat)  # one upload of the positions
    new = fnp.broadcast_to(new, tuple(idx.shape))
    updated = fnp.at(fnp.ravel(base))[flat].set(fnp.ravel(new))
    return fnp.reshape(updated, shape)


def _rebind(t: Any, value: Any, frame: Frame) -> None:
    """``t`` now holds ``value``; a tensor whose value was not made in this call is remembered
    (it must not outlive the call: see :func:`leave`)."""
    if not _made_in(t._value, frame):
        frame.written.append((weakref.ref(t), t._value))
    t._value = value


def _made_in(v: Any, frame: Frame) -> bool:
    level = frame.trace.level if frame.trace is not None else None
    while isinstance(v, Box):
        if level is not None and v._trace.level >= level:
            return True
        v = v._value
    return False


def _strip(v: Any, kind: str, level: Any) -> Any:
    """What ``detach()`` (every derivative) or ``.data`` (the transform at ``level`` only) keeps of ``v``."""
    if not is_traced(v):
        return v
    if kind == "data" and v._trace.level < level:
        return v  # nothing of that transform in it
    if kind == "data" and v._trace.level == level:
        return v._value
    from ..transforms import stop_gradient

    return stop_gradient(v)


def stop_all(v: Any) -> Any:
    """``v`` with no derivative for any transform (``detach_()`` of a traced tensor)."""
    return _strip(v, "detach", None)


def _write(t: Any, new: Any, frame: Frame) -> None:
    """Rebind ``t`` (and its base, the base's views and detached aliases) to hold ``new``."""
    root = t._base
    if root is not None:
        _rebind(root, _scatter(root._value, t._view_fns, new), frame)
    _rebind(t, new, frame)
    t._version_counter[0] += 1
    t._view_version = t._version_counter[0]
    top = root if root is not None else t
    _refresh_followers(top, t, frame)
    alias = top.__dict__.get(_ALIAS)
    if alias is not None:  # a detach()/.data tensor: its source takes the new value, not its derivative
        src, kind, level = alias
        old = src._value
        _write(src, old + _strip(top._value - old, kind, level), frame)


def _refresh_followers(root: Any, skip: Any, frame: Frame) -> None:
    entries = root.__dict__.get(_VIEWS)
    if not entries:
        return
    keep = []
    for entry in entries:
        ref, fns, kind, level = entry
        v = ref()
        if v is None:
            continue
        keep.append(entry)
        if v is skip:
            continue
        value = _boxes.replay_view(root._value, fns, raw=False) if fns else root._value
        if kind == "view":
            _rebind(v, value, frame)
            v._view_version = v._version_counter[0]
        else:  # a detached alias follows its source's value
            _rebind(v, _strip(value, kind, level), frame)
            _refresh_followers(v, None, frame)
    root.__dict__[_VIEWS] = keep


def traced_inplace(t: Any, out: Any) -> bool:
    """An in-place write of ``out`` into ``t`` where either holds a traced value (inside an ft.func
    transform): ``t`` (and, for a view, its base and the base's other views) are rebound to the
    functional update. Returns False, doing nothing, for the eager case (memory is written then)."""
    if _open[0] == 0:  # no ft.func transform is running a function (the eager fast path)
        return False
    frames = _local.frames
    if not frames:
        return False
    tv, ov = t._value, out._value
    if is_dual(tv) or is_dual(ov):
        return False
    top = t._base if t._base is not None else t
    if not (is_traced(tv) or is_traced(ov) or _ALIAS in top.__dict__):
        return False
    if _EXPANDED in top.__dict__:
        raise RuntimeError(_OVERLAP)
    shape = tuple(t.shape)
    new = ov
    if tuple(shape_of(new)) != shape:
        new = fnp.broadcast_to(new, shape)
    if not _mode.enabled:  # under no_grad the value changes, not the reverse-mode derivative (torch.func)
        old = t._value if t._base is None else _boxes.replay_view(t._base._value, t._view_fns, raw=False)
        new = old + _stop_reverse(new - old)
    _write(t, new, frames[-1])
    return True


def detach(t: Any, data: bool) -> Any:
    """``t.detach()`` (``data=False``: no derivative for any transform, as torch.func) or ``t.data``
    (only the innermost transform's derivative is dropped, as torch.func); a traced tensor's alias
    follows later in-place writes of ``t``, and writes into it change ``t``'s value, not its derivative."""
    v = t._value
    if type(v) is not np.ndarray:
        v = primal_value(v)
        if is_traced(v):
            return _detach_traced(t, v, data)
    make = _TENSOR_CLS[0]._make
    return make(v) if data else make(v, vc=t._version_counter, inference=t._inference)


def _detach_traced(t: Any, v: Any, data: bool) -> Any:
    if data:
        if not isinstance(v, (_VJPBox, _JVPBox, _ConstBox)):
            raise RuntimeError(f"accessing `data` under vmap transform is not allowed ({type(v).__name__}); use "
                               f"detach() instead")
        kind, level = "data", v._trace.level
    else:
        kind, level = "detach", None
    d = _TENSOR_CLS[0]._make(_strip(v, kind, level))
    src = t._base if t._base is not None else t
    d.__dict__[_ALIAS] = (t, kind, level)
    _follow(src, d, t._view_fns if t._base is not None else (), kind, level)
    return d


# --------------------------------------------------------------------------
# errors: eager autograd calls on traced tensors


def check_requires_grad(t: Any, requires_grad: bool) -> None:
    """``requires_grad_(True)`` on a tensor holding a traced value: torch.func's error."""
    if requires_grad and is_traced(t._value):
        raise RuntimeError(
            "You are attempting to call Tensor.requires_grad_() (or perhaps using ft.autograd.functional.* APIs) "
            "inside of a function being transformed by an ft.func transform. This is unsupported: use the ft.func "
            "transforms (grad, vjp, jacrev, jacfwd, hessian) instead, or call requires_grad_() outside of them.")


def check_backward(t: Any) -> None:
    """``backward()`` inside a function run by an ft.func transform: torch.func's error."""
    if _local.frames or is_traced(t._value):
        raise RuntimeError(
            "backward() called inside an ft.func transform. This is not supported, please use ft.func.grad or "
            "ft.func.vjp instead or call backward() outside of ft.func transforms.")


def check_data_set(t: Any, value: Any) -> None:
    """``t.data = value`` where either holds a traced value: torch.func's error."""
    if is_traced(t._value) or is_traced(value._value):
        raise RuntimeError("mutating directly with `.data` inside an ft.func transform is not allowed; use "
                           "t.copy_(value) (a tracked in-place copy) or a new tensor instead.")
