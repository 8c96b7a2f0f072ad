"""The ``Tensor`` class: a backend array plus PyTorch's autograd attributes and methods.

Every method maps onto funcgrad.numpy functions (one place per operation);
recording happens in the core's ``ReverseTrace.process`` (the steps ``graph.TensorTrace``
overrides) because a Tensor is a box of the
tensor trace. Type promotion follows PyTorch (``dtypes.result_type``) and is
applied here, before the NumPy-semantics primitive is called.

The class is split by concern: this module keeps the core (construction and
the autograd attributes: requires_grad, grad, grad_fn, backward, hooks,
retain_grad, detach, is_leaf) and the shared helpers; the methods live in
mixins: ``_tensor_math`` (arithmetic, elementwise, reductions, linear
algebra), ``_tensor_shape`` (shape, views, indexing), ``_tensor_inplace``
(``*_`` methods, ``__setitem__``) and ``_tensor_convert`` (dtype/device,
``numpy()``/``item()``, printing, copying, ``new_*``).
"""

from __future__ import annotations

import builtins
import collections
import functools
import math
import operator
import threading
import warnings
import weakref
from typing import Any, Callable, Sequence, SupportsIndex, Union, cast

import numpy as np

import funcgrad.numpy as fnp

from .. import backend as _backend
from ..backend import namespace_of
from ..core import Box
from . import dtypes as _dt
from . import forward_ad as _fwad
from .dual_trace import primal_value
from . import graph as _graph
from .graph import GraphBox, PrimNode, RemovableHandle, _add_hook, apply_inplace
from . import _func_support as _func
from .tensor_class import register_tensor_class
from .torch_names import rename_node

__all__ = ["Tensor", "Size", "device", "is_tensor"]

_pyint, _pyfloat, _pybool, _pycomplex = builtins.int, builtins.float, builtins.bool, builtins.complex

# ``ft.tensor`` and ``ft.empty``, registered by creation.py (which imports this module): what ``Tensor(...)``
# and ``_as_tensor`` of Python data call
_CONSTRUCTORS: dict[str, Callable[..., Any]] = {}


def register_constructors(**constructors: Callable[..., Any]) -> None:
    """Register creation.py's ``tensor`` and ``empty``, which ``Tensor(...)`` calls."""
    _CONSTRUCTORS.update(constructors)


# ``ft.autograd.backward``, registered by backward.py (which imports this module): what ``Tensor.backward`` runs
_BACKWARD: list[Callable[..., Any]] = []


def register_backward(fn: Callable[..., Any]) -> None:
    """Register ``fn(tensors, grad_tensors, retain_graph, create_graph, inputs=)`` as what ``Tensor.backward`` runs."""
    _BACKWARD[:] = [fn]
_grad_lock = threading.RLock()


class Size(tuple[int, ...]):
    """A tensor's shape, like ``torch.Size`` (a tuple with ``numel()``)."""

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"ft.Size([{', '.join(str(s) for s in self)}])"


class device:
    """Where a tensor's data lives: ``device('cpu')`` or ``device('cuda', 0)``.

    ``'cuda'`` is an NVIDIA GPU through CuPy (``pip install 'funcgrad[cuda]'``);
    other platforms registered with ``funcgrad.backend.register_backend`` work too.
    An int is a CUDA device index, as in PyTorch (``device(0)`` is ``cuda:0``).
    """

    __slots__ = ("type", "index")
    type: str  # "cpu", "cuda", ...
    index: int | None

    def __init__(self, type: Any, index: int | None = None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, _backend.Device):
            type, index = type.platform, (None if type.platform == "cpu" else type.id)
        elif isinstance(type, (int, np.integer)) and not isinstance(type, bool):
            type, index = "cuda", _pyint(type)
        elif isinstance(type, str) and ":" in type:
            type, idx = type.split(":", 1)
            index = _pyint(idx)
        if type not in ("cpu", "cuda") and type not in _backend._BACKENDS:
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and (
            self.index == other.index or self.index is None or other.index is None)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


_CPU = device("cpu")
# Argument types of the public API: a size (``2, 3`` or ``(2, 3)``) and a dim (one or several).
SizeArg = Union[SupportsIndex, Sequence[SupportsIndex]]
DimArg = Union[SupportsIndex, Sequence[SupportsIndex], None]

_TORCH_SCALAR = {"float64": "double", "float32": "float", "float16": "half", "int64": "long", "int32": "int"}

MaxMin = collections.namedtuple("return_types", ["values", "indices"])  # type: ignore[name-match]  # torch's repr


def is_tensor(x: Any) -> bool:
    """True for ft Tensors (and Parameters)."""
    return isinstance(x, Tensor)


def _seq_mark() -> int:
    return next(_graph._seq)


def _rename(out: Any, name: str, mark: int) -> Tensor:
    node = getattr(out, "_node", None)
    if node is not None and node._seq > mark and isinstance(node, PrimNode):
        rename_node(node, name)
    return cast("Tensor", out)


def _dims(dim: Any, nd: int) -> tuple[Any, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(_wrap_dim(d, nd) for d in dim) or None  # () reduces over every dim, as None
    return (_wrap_dim(dim, nd),)


def _wrap_dim(d: Any, nd: int) -> int:
    d = _pyint(d)
    n = max(nd, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return cast("int", d % n)


def _to_raw_index(idx: Any) -> Any:
    """Tensors inside an index become raw arrays; indices carry no derivative."""
    if isinstance(idx, tuple):
        return tuple(_to_raw_index(i) for i in idx)
    if isinstance(idx, GraphBox):
        return idx._value
    if isinstance(idx, list) and any(isinstance(i, GraphBox) for i in idx):
        return [_to_raw_index(i) for i in idx]
    return idx


def _is_basic(idx: tuple[Any, ...]) -> bool:
    for i in idx:
        if i is None or i is Ellipsis or isinstance(i, slice):
            continue
        if isinstance(i, (_pyint, np.integer)) and not isinstance(i, (_pybool, np.bool_)):
            continue
        return False
    return True


def _rebuild(array: np.ndarray, requires_grad: bool) -> Tensor:
    return Tensor._make(array, requires_grad=requires_grad)


# --------------------------------------------------------------------------
# helpers


def _raw(x: Any) -> Any:
    return x._value if isinstance(x, GraphBox) else x


def _shares(a: Any, b: Any) -> bool:
    ob = getattr(a, "base", None)
    return ob is not None and (ob is b or ob is getattr(b, "base", None))


def _shape_arg(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    return tuple(_pyint(s) for s in shape)


def _as_tensor(x: Any) -> Tensor:
    """A Tensor from a Tensor, a NumPy array, a box or Python data (untracked)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, GraphBox):
        return cast("Tensor", _graph.as_tensor_box(x))
    if isinstance(x, Box):
        raise TypeError(
            "a value traced by a funcgrad transform cannot be used as a Tensor; use funcgrad.numpy on it instead"
        )
    tensor = _CONSTRUCTORS["tensor"]
    if isinstance(x, np.ndarray):
        return Tensor._make(x) if x.dtype in _dt._BY_NP else tensor(x)
    return tensor(x)  # type: ignore[no-any-return]


def _cond(c: Any) -> Any:
    """A ``where`` condition computed from a tensor's value: under ``ft.func`` that value is a transform's
    traced value, kept inside a Tensor so the condition and the tensors reach the transform together."""
    return Tensor._make(c) if isinstance(c, Box) else c


def _as_operand(x: Any) -> Any:
    """Tensors stay, Python numbers stay (weak, as in PyTorch), arrays become Tensors."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (_pybool, _pyint, _pyfloat, _pycomplex)):
        return x
    return _as_tensor(x)


def _cast(t: Tensor, d: _dt.dtype) -> Tensor:
    if t._value.dtype == d.np:
        return t
    return _as_tensor(fnp.astype(t, d.np))


def _promote(a: Any, b: Any) -> tuple[Any, ...]:
    # fast paths: same dtype, or a floating tensor with a real Python number
    ta, tb = type(a), type(b)
    if ta is Tensor or ta is _PARAM[0]:
        if tb is Tensor or tb is _PARAM[0]:
            if a._value.dtype == b._value.dtype:
                return a, b
        elif (tb is _pyfloat or tb is _pyint) and a._value.dtype.kind in "fc":
            return a, b
    elif (ta is _pyfloat or ta is _pyint) and (tb is Tensor or tb is _PARAM[0]) and b._value.dtype.kind in "fc":
        return a, b
    a, b = _as_operand(a), _as_operand(b)
    rt = _dt.result_type(a, b)
    if isinstance(a, Tensor):
        a = _cast(a, rt)
    if isinstance(b, Tensor):
        b = _cast(b, rt)
    return a, b


def _scalar_like(v: Any, t: Tensor) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _zero_like_scalar(t: Tensor) -> Any:
    return namespace_of(t._value).zeros((), dtype=t._value.dtype)


def _binary(fn: Callable[..., Any], a: Any, b: Any, true_div: bool = False) -> Tensor:
    a, b = _promote(a, b)
    if true_div and (a if isinstance(a, Tensor) else b)._value.dtype.kind in "biu":
        d = _dt.get_default_dtype()
        a = _cast(a, d) if isinstance(a, Tensor) else _pyfloat(a)
        b = _cast(b, d) if isinstance(b, Tensor) else _pyfloat(b)
    out = fn(a, b)
    return out if isinstance(out, Tensor) else _as_tensor(out)


def _binop(fn: Callable[..., Any], reflected: bool = False, true_div: bool = False) -> Callable[[Tensor, Any], Tensor]:
    """The operator method ``self (op) other`` (``other (op) self`` when ``reflected``), through ``_binary``."""
    if reflected:
        def op(self: Tensor, other: Any) -> Tensor:
            return _binary(fn, other, self, true_div)
    else:
        def op(self: Tensor, other: Any) -> Tensor:
            return _binary(fn, self, other, true_div)
    return op


def _compare(fn: Callable[..., Any], a: Any, b: Any) -> Tensor:
    if b is None or isinstance(b, str):
        return cast("Tensor", NotImplemented)
    a, b = _promote(a, b)
    return _wrap_nondiff(fn(_raw(a), _raw(b)))


def _logical(fn: Callable[..., Any], a: Any, b: Any) -> Tensor:
    return _wrap_nondiff(fn(_raw(a), _raw(_as_operand(b))))


def _wrap_nondiff(v: Any) -> Tensor:
    if isinstance(v, Tensor):
        return v
    if isinstance(v, GraphBox):
        return cast("Tensor", _graph.as_tensor_box(v))
    return Tensor._make(_graph._as_array(v))


def _float(t: Tensor) -> Tensor:
    if t._value.dtype.kind in "biu":
        return _cast(t, _dt.get_default_dtype())
    return t


def _unary(fn: Callable[..., Any], to_float: bool = True) -> Callable[[Tensor], Tensor]:
    """The method ``t.<name>()``: ``fn(t)`` (a one-argument primitive), in floats for an integer ``t``
    when ``to_float``. ``ft.<name>`` calls the primitive the same way (``_prim``, see ops.py)."""
    prim = fn.primitive  # type: ignore[attr-defined]

    def method(self: Tensor) -> Tensor:
        if to_float and self._value.dtype.kind in "biu":
            self = _cast(self, _dt.get_default_dtype())
        return fn(self)  # type: ignore[no-any-return]

    method.__name__ = method.__qualname__ = prim.name
    method._prim = prim  # type: ignore[attr-defined]
    return method


def _backend_device(dev: device) -> Any:
    """The funcgrad.backend Device for a Tensor-layer device (index None: device 0)."""
    return _backend.as_device("cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}")


def _to_device(t: Tensor, dev: device) -> Tensor:
    """``t`` on ``dev``: ``t`` itself when it is there already, else a copy that autograd
    records (``ToCopyBackward0``: the gradient goes back to ``t``'s device)."""
    target = _backend_device(dev)
    if _backend.device_of(t._value) == target:
        return t
    from ..numpy.creation import device_copy

    mark = _seq_mark()
    return _rename(_as_tensor(device_copy(t, target)), "ToCopyBackward0", mark)


def _finish_inplace(t: Tensor, out: Tensor, mark: int, check_dtype: bool = True) -> Tensor:
    if out._value.dtype != t._value.dtype:
        if check_dtype and not _dt.can_cast(out.dtype, t.dtype):
            raise RuntimeError(
                f"result type {_dt.SCALAR_NAMES[out.dtype]} can't be cast to the desired output type "
                f"{_dt.SCALAR_NAMES[t.dtype]}"
            )
        out = _cast(out, t.dtype)
    if out._value.shape != t._value.shape:
        bs = np.broadcast_shapes(out._value.shape, t._value.shape)
        if bs != t._value.shape:
            raise RuntimeError(
                f"output with shape [{', '.join(map(str, t.shape))}] doesn't match the broadcast shape "
                f"[{', '.join(map(str, bs))}]"
            )
        if out._requires_grad:
            out = _as_tensor(fnp.broadcast_to(out, t._value.shape))
    if _func.traced_inplace(t, out):  # under ft.func: a traced value is rebound to the update, not written
        return t
    return cast("Tensor", apply_inplace(t, out, mark))


# --------------------------------------------------------------------------
# printing


def _format(t: Tensor) -> str:
    v = primal_value(t._value)
    if namespace_of(v) is not np:
        from ..backend import to_numpy

        v = to_numpy(v)
    d = t.dtype
    prefix = "tensor("
    if v.size == 0:
        body = "[]" if v.ndim == 1 else f"[], size=({', '.join(map(str, v.shape))},)"
    else:
        kind = v.dtype.kind
        fmt: dict[Any, Any] = {}
        if kind == "f":
            finite = v[np.isfinite(v)].astype(np.float64)  # (float16: 1e8 would overflow in comparisons)
            absmax = np.abs(finite).max() if finite.size else 0.0
            nonzero = np.abs(finite[finite != 0])
            absmin = nonzero.min() if nonzero.size else 0.0
            if finite.size and np.all(finite == np.round(finite)) and absmax < 1e8:
                fmt["float_kind"] = lambda x: f"{x:.0f}." if np.isfinite(x) else str(x)
            elif absmax >= 1e8 or (absmin and absmin < 1e-4) or (absmin and absmax / absmin > 1e5):
                fmt["float_kind"] = lambda x: f"{x:.4e}"
            else:
                fmt["float_kind"] = lambda x: f"{x:.4f}"
        elif kind == "c":
            fmt["complex_kind"] = lambda x: f"{x.real:.4f}{x.imag:+.4f}j"
        for key, f in list(fmt.items()):
            sample = v.ravel() if v.size <= 1000 else np.concatenate([v.ravel()[:3], v.ravel()[-3:]])
            width = max(len(f(e)) for e in sample)
            fmt[key] = (lambda f_, w_: (lambda e: f_(e).rjust(w_)))(f, width)
        body = np.array2string(v, separator=", ", prefix=prefix, formatter=cast(Any, fmt or None), threshold=1000,
                               edgeitems=3)
    extras = []
    if d not in (_dt.get_default_dtype(), _dt.int64, _dt.bool) and not (d.is_complex and d is _dt.default_complex()):
        extras.append(f"dtype={d!r}")
    node = t._graph()[0] if t._base is not None and t._view_kind is None else t._node  # (a stale view: refreshed)
    if node is not None:
        extras.append(f"grad_fn=<{getattr(node, '_short', None) or node.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    tangent = _fwad.unpack_dual(t).tangent if t._value is not v else None
    if tangent is not None:
        extras.append(f"tangent={tangent!r}")
    if t.device.type != "cpu":
        extras.insert(0, f"device='{t.device}'")
    return prefix + body + "".join(", " + e for e in extras) + ")"


# The mixins import the helpers above from this (partly initialised) module.
from . import _tensor_math  # noqa: E402
from . import _tensor_shape  # noqa: E402
from . import _tensor_inplace  # noqa: E402
from . import _tensor_convert  # noqa: E402
from ._tensor_math import _MathMixin  # noqa: E402
from ._tensor_shape import _ShapeMixin  # noqa: E402
from ._tensor_inplace import _InplaceMixin  # noqa: E402
from ._tensor_convert import _ConvertMixin  # noqa: E402
from ._tensor_breadth_b import _BreadthMixinB  # noqa: E402


class Tensor(_MathMixin, _ShapeMixin, _InplaceMixin, _ConvertMixin, _BreadthMixinB, GraphBox):
    """A multi-dimensional array that records operations for autograd, like ``torch.Tensor``.

    Create tensors with :func:`ft.tensor`, :func:`ft.zeros`, :func:`ft.randn` ...;
    ``Tensor(data)`` makes a default-dtype tensor and ``Tensor(2, 3)`` an
    uninitialized one, as in PyTorch.

    Example::

        x = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
        x.grad                       # tensor([2., 4., 6.])
    """

    __slots__ = ("__dict__",)
    # Set on few tensors (leaves, hooks, retain_grad): class defaults until then, so _make writes none of them.
    _grad: "Tensor | None" = None
    _retains_grad: builtins.bool = False
    _hooks: dict[builtins.int, Any] | None = None
    _post_hooks: dict[builtins.int, Any] | None = None
    _accumulator: Any = None
    __array_priority__ = 1000.0

    def __new__(cls, *args: Any, **kwargs: Any) -> "Tensor":
        if not args and not kwargs:
            return object.__new__(cls)
        t: Tensor
        if args and all(isinstance(a, (_pyint, np.integer)) for a in args):
            t = _CONSTRUCTORS["empty"](*args, **kwargs)
        else:
            t = _CONSTRUCTORS["tensor"](args[0], dtype=kwargs.get("dtype", _dt.get_default_dtype()))
        if cls is not Tensor:
            t = cls._from(t)
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def _from(cls, t: "Tensor", requires_grad: bool | None = None) -> "Tensor":
        return cls._make(t._value, t._node, t._output_nr, t._requires_grad if requires_grad is None else requires_grad,
                         t._vc, t._inference)

    def is_inference(self) -> bool:
        return self._inference

    @property
    def is_leaf(self) -> bool:
        self._graph()
        return self._node is None

    @property
    def requires_grad(self) -> bool:
        if self._base is not None and self._view_kind is None:
            self._graph()  # a view whose base changed in place takes its history from the base now
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set whether autograd records operations on this leaf (in place); returns self."""
        if not isinstance(requires_grad, (_pybool, np.bool_)):
            raise TypeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        requires_grad = _pybool(requires_grad)
        _func.check_requires_grad(self, requires_grad)
        if self._node is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if requires_grad and self._value.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = requires_grad
        return self

    @property
    def grad_fn(self) -> Any:
        node, _ = self._graph()
        return node

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self) -> "Tensor | None":
        if self._node is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                "Tensor by mistake, make sure you access the leaf Tensor instead.",
                UserWarning, stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value._value.shape != self._value.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '[{', '.join(map(str, value.shape))}]' to a tensor of "
                    f"size '[{', '.join(map(str, self.shape))}]'. Please ensure that the gradient and the tensor are "
                    f"the same size"
                )
            if value.device != self.device:
                raise RuntimeError(
                    f"attempting to assign a gradient located on device '{value.device}' to a tensor located on "
                    f"device '{self.device}'. Please ensure that the gradient and the tensor are on the same device"
                )
            if value._value.dtype != self._value.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_TORCH_SCALAR.get(value.dtype.name, value.dtype.name)}'"
                    f" to a tensor with grad_dtype '{_dt.SCALAR_NAMES[self.dtype]}'. The gradient must match the "
                    f"tensor's dtype."
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Populate ``.grad`` of this non-leaf tensor during backward (a no-op on leaves). It follows
        the tensor through later in-place changes: ``.grad`` is the gradient of its last version."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._retains_grad:
            return
        node, nr = self._graph()
        if node is None:
            return
        if node._retain is None:
            node._retain = {}
        node._retain[nr] = weakref.ref(self)
        self._retains_grad = True

    def register_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(grad)`` runs when the gradient w.r.t. this tensor is computed; returning a
        tensor replaces the gradient. Returns a handle with ``remove()``.

        Example::

            h = x.register_hook(lambda g: g * 2)

        A hook belongs to the current version of the tensor: after an in-place change it still
        sees the gradient of the old value; register again for the new one (as in PyTorch).
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node, nr = self._graph()
        if node is None:
            if self._hooks is None:
                self._hooks = {}
            return _add_hook(self._hooks, hook)
        return cast("RemovableHandle", node._tensor_hook(nr, hook))

    def register_post_accumulate_grad_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(tensor)`` runs after the gradient was accumulated into this leaf's ``.grad``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._node is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_hooks is None:
            self._post_hooks = {}
        return _add_hook(self._post_hooks, hook)

    # ------------------------------------------------------------------ data
    @property
    def data(self) -> "Tensor":
        """The same memory, detached, with a separate version counter (PyTorch's ``.data``)."""
        return cast("Tensor", _func.detach(self, data=True))

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        _func.check_data_set(self, value)
        self._value = value._value

    def detach(self) -> "Tensor":
        """A tensor sharing memory and version counter, cut from the graph."""
        return cast("Tensor", _func.detach(self, data=False))

    def detach_(self) -> "Tensor":
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
                "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self._node = None
        self._requires_grad = False
        if _func.is_traced(self._value):  # under ft.func: no derivative for the transforms either
            self._value = _func.stop_all(self._value)
        return self

    def __hash__(self) -> int:
        return id(self)

    # ------------------------------------------------------------------ autograd
    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor w.r.t. graph leaves into their ``.grad``.

        ``gradient`` is required unless the tensor has one element. See
        :func:`ft.autograd.backward`.
        """
        _func.check_backward(self)
        _BACKWARD[0](self, gradient, retain_graph, create_graph, inputs=inputs)

    # NumPy interop: ndarray (op) Tensor defers to Tensor's reflected operators
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and not kwargs:
            name = ufunc.__name__
            op = _UFUNC_OPS.get(name)
            if op is not None and len(inputs) == 2:
                a, b = inputs
                return op(_as_tensor(a), b) if not isinstance(a, Tensor) else op(a, b)
            fn = getattr(fnp, name, None)
            if fn is not None:
                return _as_tensor(fn(*inputs))
        args = [i.numpy() if isinstance(i, Tensor) else i for i in inputs]
        return getattr(ufunc, method)(*args, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        def conv(a: Any) -> Any:
            if isinstance(a, Tensor):
                return a.numpy()
            if isinstance(a, (list, tuple)):
                return type(a)(conv(x) for x in a)
            return a

        return func(*conv(args), **{k: conv(v) for k, v in kwargs.items()})


_UFUNC_OPS: dict[str, Callable[..., Any]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "true_divide": operator.truediv,
    "divide": operator.truediv, "power": operator.pow, "matmul": Tensor.matmul,
    **{name: functools.partial(_compare, getattr(fnp, name))  # Tensor.__eq__ ... (_tensor_math._compare_op)
       for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")},
}

register_tensor_class(Tensor)
_PARAM: list[Any] = [Tensor]  # replaced by ft.nn.Parameter once defined (fast type checks)
