"""Conversion methods of ``Tensor``: dtype and device, ``numpy()``, ``item()``, ``tolist()``, printing, copying, ``new_*`` factories.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` (its only subclass). It takes the helpers it shares from
``tensor_helpers`` and ``size_device`` and never imports ``tensor.py``: it is generic in the Tensor class
(``TensorT``, see ``tensor_type.py``).
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import copy as _copy
from typing import Any, Callable, SupportsIndex, cast

import numpy as np

import funcgrad.numpy as fnp

from .. import backend as _backend
from ..backend import namespace_of
from ..core.batching import BatchTrace
from . import dtypes as _dt
from . import forward_ad as _fwad
from .dual_trace import primal_value
from .grad_mode import state as _grad_mode

from .tensor_class import is_tensor
from .tensor_repr import format_tensor
from .torch_names import named
from .size_device import Size, device, _CPU
from .tensor_helpers import (
    _CONSTRUCTORS, _pyint, _pyfloat, _pybool, _pycomplex, _cast, _to_device,
)
from .tensor_type import TensorBase, TensorT


# torch.func.vmap's words for reading a batched tensor's value
_VMAP_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() "
              "on a Tensor, please try to rewrite what you're doing with other operations. If error is occurring "
              "somewhere inside PyTorch internals, please file a bug report.")
_VMAP_CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                      "We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")


def _refuse_under_vmap(v: Any, message: str) -> None:
    """Raise PyTorch's RuntimeError when the raw value ``v`` is batched by ``ft.func.vmap`` (at any
    nesting depth): its value is one per batch element, so no single Python number exists."""
    while getattr(v, "_trace", None) is not None:
        if isinstance(v._trace, BatchTrace):
            raise RuntimeError(message)
        v = v._value


def _cast_to(name: str) -> Callable[["TensorT"], "TensorT"]:
    """The method casting a tensor to ``ft.<name>`` (``x.double()`` is ``x.to(ft.float64)``)."""
    dtype = getattr(_dt, name)

    def method(self: TensorT) -> "TensorT":
        return _cast(self, dtype)

    return method


def _new_of(name: str) -> Callable[..., Any]:
    """The method ``new_<name>(*size, dtype=None, device=None, requires_grad=False)``: ``ft.<name>`` in this
    tensor's dtype and on its device unless ``dtype``/``device`` are given (``x.new_zeros(2, 3)``)."""

    def method(self: TensorT, *size: Any, dtype: Any = None, device: Any = None,
               requires_grad: builtins.bool = False, **_: Any) -> "TensorT":
        return _CONSTRUCTORS[name](*size, dtype=dtype or self.dtype, device=device or self.device,
                                   requires_grad=requires_grad)

    method.__name__ = method.__qualname__ = "new_" + name
    return method


class _ConvertMixin(TensorBase[TensorT]):
    __slots__ = ()

    @property
    def dtype(self: TensorT) -> _dt.dtype:
        return _dt._BY_NP[self._value.dtype]

    @property
    def device(self: TensorT) -> device:
        ns = namespace_of(self._value)
        if ns is np:
            return _CPU
        d = _backend.device_of(self._value)
        return device(d.platform, d.id)

    @property
    def is_cuda(self: TensorT) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self: TensorT) -> bool:
        return self.device.type == "cpu"

    def element_size(self: TensorT) -> int:
        return cast("int", self._value.dtype.itemsize)

    def is_floating_point(self: TensorT) -> bool:
        return cast("bool", self._value.dtype.kind == "f")

    def is_complex(self: TensorT) -> bool:
        return cast("bool", self._value.dtype.kind == "c")

    def numpy(self: TensorT, force: bool = False) -> np.ndarray:
        """The data as a NumPy array sharing memory (host tensors only); a tensor that requires grad
        is refused while grad mode is on (under ``no_grad`` it is not, as in PyTorch)."""
        if self.requires_grad and not force and _grad_mode.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        v = primal_value(self._value)
        if namespace_of(v) is not np:
            if force:
                return cast("np.ndarray", _backend.to_numpy(v))
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                f"to host memory first."
            )
        return cast("np.ndarray", v)

    def __array__(self: TensorT, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self: TensorT) -> Any:
        """The value of a one-element tensor as a Python number."""
        v = primal_value(self._value)
        _refuse_under_vmap(v, _VMAP_ITEM)
        if v.size != 1:
            raise RuntimeError(f"a Tensor with {v.size} elements cannot be converted to Scalar")
        return v.reshape(()).item()

    def tolist(self: TensorT) -> Any:
        v = primal_value(self._value)
        return v.tolist() if namespace_of(v) is np else v.get().tolist()

    def __float__(self: TensorT) -> float:
        return _pyfloat(self.item())

    def __int__(self: TensorT) -> int:
        return _pyint(self.item())

    def __complex__(self: TensorT) -> complex:
        return _pycomplex(self.item())

    def __index__(self: TensorT) -> int:
        if self._value.dtype.kind not in "iub" or self._value.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return _pyint(self.item())

    def __bool__(self: TensorT) -> bool:
        if self._value.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        _refuse_under_vmap(primal_value(self._value), _VMAP_CONTROL_FLOW)
        return _pybool(self.item())

    def __repr__(self: TensorT) -> str:
        return _format(self)

    __str__ = __repr__

    def __format__(self: TensorT, spec: str) -> str:
        return format(self.item(), spec) if self._value.ndim == 0 else repr(self)

    def __deepcopy__(self: TensorT, memo: dict[Any, Any]) -> "TensorT":
        if self._node is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
                "the moment.  If you were attempting to deepcopy a module, this may be because of a "
                "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]
        v = self._value
        new = type(self)._make(namespace_of(v).array(v, copy=True), requires_grad=self._requires_grad)
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = _copy.deepcopy(self._grad, memo)
        if hasattr(self, "__dict__") and self.__dict__:
            new.__dict__.update(_copy.deepcopy(self.__dict__, memo))
        return new

    def __copy__(self: TensorT) -> "TensorT":
        return self.__deepcopy__({})

    # ------------------------------------------------------------------ conversion
    def to(self: TensorT, *args: Any, **kwargs: Any) -> "TensorT":
        """``to(dtype)``, ``to(device)``, ``to(other)``, ``to(device, dtype)``; ``copy=True`` forces a copy."""
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if is_tensor(a):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, (_dt.dtype, np.dtype)) or a in (_pyfloat, _pyint, _pybool, _pycomplex):
                dtype = a
            elif isinstance(a, (str, device)):
                dev = a
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
        out = self
        if dev is not None:
            out = _to_device(out, device(dev))
        if dtype is not None:
            out = _cast(out, _dt.as_dtype(dtype))
        if copy and out is self:
            out = self.clone()
        return out

    def type(self: TensorT, dtype: Any = None) -> Any:
        return f"ft.{_dt.TYPE_NAMES[self.dtype]}" if dtype is None else self.to(dtype)

    def type_as(self: TensorT, other: "TensorT") -> "TensorT":
        return self.to(other.dtype)

    # x.float(), x.double() ... : casts to a fixed dtype
    float, double, half, long, int, bool, cfloat, cdouble = (
        _cast_to(name) for name in ("float32", "float64", "float16", "int64", "int32", "bool", "complex64", "complex128"))

    def cpu(self: TensorT) -> "TensorT":
        """A copy in host memory (this tensor itself when it is there already); differentiable."""
        return _to_device(self, _CPU)

    def cuda(self: TensorT, device_: Any = None, non_blocking: builtins.bool = False) -> "TensorT":
        """A copy on a CUDA GPU (``device_``: an index, ``'cuda:1'`` or a device; default GPU 0).

        Needs CuPy (``pip install 'funcgrad[cuda]'``) and a visible GPU; differentiable.
        """
        if device_ is None:
            dev = device("cuda", 0)
        elif isinstance(device_, (int, np.integer)):
            dev = device("cuda", _pyint(device_))
        else:
            dev = device(device_)
            if dev.type != "cuda":
                raise RuntimeError(f"Invalid device, must be cuda device, got {dev}")
        return _to_device(self, dev)

    def clone(self: TensorT, memory_format: Any = None) -> "TensorT":
        return named("CloneBackward0", fnp.copy)(self)

    # ------------------------------------------------------------------ new_* factories
    new_zeros: Callable[..., TensorT]
    new_ones: Callable[..., TensorT]
    new_empty: Callable[..., TensorT]
    new_zeros, new_ones, new_empty = _new_of("zeros"), _new_of("ones"), _new_of("empty")

    def new_full(self: TensorT, size: Any, fill_value: Any, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False, **_: Any) -> "TensorT":
        return _CONSTRUCTORS["full"](size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                                     requires_grad=requires_grad)

    def new_tensor(self: TensorT, data: Any, dtype: Any = None, device: Any = None,
                   requires_grad: builtins.bool = False, **_: Any) -> "TensorT":
        return _CONSTRUCTORS["tensor"](data, dtype=dtype or self.dtype, device=device or self.device,
                                         requires_grad=requires_grad)

    def new(self: TensorT, *args: Any) -> "TensorT":
        """Legacy constructor: ``x.new(2, 3)`` is uninitialised with ``x``'s dtype, ``x.new([1, 2])``
        converts data to ``x``'s dtype, ``x.new()`` is empty and ``x.new(t)`` is ``t`` itself."""
        if not args:
            return _CONSTRUCTORS["empty"](0, dtype=self.dtype)
        if len(args) == 1 and is_tensor(args[0]):
            return args[0]
        if builtins.all(isinstance(a, (int, np.integer)) for a in args) or (
                len(args) == 1 and isinstance(args[0], Size)):
            return _CONSTRUCTORS["empty"](*args, dtype=self.dtype)
        if len(args) == 1:
            return _CONSTRUCTORS["tensor"](args[0], dtype=self.dtype)
        raise TypeError(f"new(): expected sizes (ints) or one data argument, got {args!r}")


# --------------------------------------------------------------------------
# printing


def _format(t: TensorT) -> str:
    v = primal_value(t._value)
    if namespace_of(v) is not np:
        from ..backend import to_numpy

        v = to_numpy(v)
    d = t.dtype
    extras = []
    if v.size == 0:  # nothing to tell an integer dtype by: shown unless it is the default float
        if v.ndim != 1:
            extras.append(f"size={tuple(v.shape)}")
        if d is not _dt.get_default_dtype():
            extras.append(f"dtype={d!r}")
    elif d not in (_dt.get_default_dtype(), _dt.int64, _dt.bool) and not (d.is_complex and d is _dt.default_complex()):
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
    return format_tensor(v, extras)
