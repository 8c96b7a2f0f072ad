"""The ``Tensor`` class: a backend array plus PyTorch's autograd attributes and methods.

Every method maps onto funcgrad.numpy functions (one place per operation);
recording happens in ``graph.record`` because a Tensor is a box of the
tensor trace. Type promotion follows PyTorch (``dtypes.result_type``) and is
applied here, before the NumPy-semantics primitive is called.
"""

from __future__ import annotations

import builtins
import collections
import copy as _copy
import threading
import warnings
from typing import Any, Callable, Iterator, Sequence, SupportsIndex, Union, cast

import numpy as np

import funcgrad.numpy as fnp

from .. import backend as _backend
from ..backend import namespace_of
from ..core import Box
from . import dtypes as _dt
from . import forward_ad as _fwad
from . import graph as _graph
from .graph import GraphBox, PrimNode, RemovableHandle, _add_hook, apply_inplace
from .grad_mode import state as _mode

__all__ = ["Tensor", "Size", "device", "is_tensor"]

_pyint, _pyfloat, _pybool, _pycomplex = builtins.int, builtins.float, builtins.bool, builtins.complex
_grad_lock = threading.RLock()


class Size(tuple[int, ...]):
    """A tensor's shape, like ``torch.Size`` (a tuple with ``numel()``)."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

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
        _graph.rename_node(node, name)
    return cast("Tensor", out)


def _dims(dim: Any, nd: int) -> tuple[Any, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        return tuple(_wrap_dim(d, nd) for d in dim)
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


class Tensor(GraphBox):
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

    __slots__ = ("_grad", "_retains_grad", "_hooks", "_post_hooks", "_accumulator", "__dict__")
    _grad: "Tensor | None"
    _retains_grad: builtins.bool
    _hooks: dict[builtins.int, Any] | None
    _post_hooks: dict[builtins.int, Any] | None
    _accumulator: Any
    __array_priority__ = 1000.0

    @staticmethod
    def _extra_init(b: "Tensor") -> None:
        b._grad = None
        b._retains_grad = False
        b._hooks = None
        b._post_hooks = None
        b._accumulator = None

    def __new__(cls, *args: Any, **kwargs: Any) -> "Tensor":
        if not args and not kwargs:
            return object.__new__(cls)
        from . import creation

        if args and all(isinstance(a, (_pyint, np.integer)) for a in args):
            t = creation.empty(*args, **kwargs)
        else:
            t = creation.tensor(args[0], dtype=kwargs.get("dtype", _dt.get_default_dtype()))
        if cls is not Tensor:
            t = cls._from(t)
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def _from(cls, t: "Tensor", requires_grad: bool | None = None) -> "Tensor":
        new = cls._make(t._value, t._node, t._output_nr, t._requires_grad if requires_grad is None else requires_grad,
                        t._vc, t._inference)
        return new

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._value.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._value.shape)
        return self._value.shape[_wrap_dim(dim, self._value.ndim)]

    def dim(self) -> int:
        return cast("int", self._value.ndim)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return cast("int", self._value.ndim)

    def numel(self) -> int:
        return _pyint(self._value.size)

    nelement = numel

    @property
    def dtype(self) -> _dt.dtype:
        return _dt._BY_NP[self._value.dtype]

    @property
    def device(self) -> device:
        ns = namespace_of(self._value)
        if ns is np:
            return _CPU
        d = _backend.device_of(self._value)
        return device(d.platform, d.id)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def element_size(self) -> int:
        return cast("int", self._value.dtype.itemsize)

    def is_floating_point(self) -> bool:
        return cast("bool", self._value.dtype.kind == "f")

    def is_complex(self) -> bool:
        return cast("bool", self._value.dtype.kind == "c")

    def is_contiguous(self, memory_format: Any = None) -> bool:
        flags = getattr(self._value, "flags", None)
        return True if flags is None else _pybool(flags.c_contiguous)

    def contiguous(self, memory_format: Any = None) -> "Tensor":
        if self.is_contiguous():
            return self
        return self.clone()

    def is_inference(self) -> bool:
        return self._inference

    @property
    def is_leaf(self) -> bool:
        self._graph()
        return self._node is None

    @property
    def requires_grad(self) -> bool:
        if self._base is not None:
            self._graph()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set whether autograd records operations on this leaf (in place); returns self."""
        if not isinstance(requires_grad, (_pybool, np.bool_)):
            raise TypeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        requires_grad = _pybool(requires_grad)
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
        """Populate ``.grad`` of this non-leaf tensor during backward (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        node, nr = self._graph()
        if node is None or self._retains_grad:
            return
        import weakref

        if node._retain is None:
            node._retain = {}
        node._retain[nr] = weakref.ref(self)
        self._retains_grad = True

    def register_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(grad)`` runs when the gradient w.r.t. this tensor is computed; returning a
        tensor replaces the gradient. Returns a handle with ``remove()``.

        Example::

            h = x.register_hook(lambda g: g * 2)
        """
        if not self._requires_grad:
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
        return Tensor._make(_fwad.primal_value(self._value))

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._value = value._value

    def detach(self) -> "Tensor":
        """A tensor sharing memory and version counter, cut from the graph."""
        return Tensor._make(_fwad.primal_value(self._value), vc=self._vc, inference=self._inference)

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
        return self

    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array sharing memory (host tensors only)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        v = _fwad.primal_value(self._value)
        if namespace_of(v) is not np:
            if force:
                from ..backend import to_numpy

                return cast("np.ndarray", to_numpy(v))
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                f"to host memory first."
            )
        return cast("np.ndarray", v)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        if dtype is not None:
            a = a.astype(dtype)
        return a

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        v = _fwad.primal_value(self._value)
        if v.size != 1:
            raise RuntimeError(f"a Tensor with {v.size} elements cannot be converted to Scalar")
        return v.reshape(()).item() if namespace_of(v) is np else v.reshape(()).item()

    def tolist(self) -> Any:
        v = _fwad.primal_value(self._value)
        return v.tolist() if namespace_of(v) is np else v.get().tolist()

    def __float__(self) -> float:
        return _pyfloat(self.item())

    def __int__(self) -> int:
        return _pyint(self.item())

    def __complex__(self) -> complex:
        return _pycomplex(self.item())

    def __index__(self) -> int:
        if self._value.dtype.kind not in "iub" or self._value.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return _pyint(self.item())

    def __bool__(self) -> bool:
        if self._value.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return _pybool(self.item())

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return cast("int", self._value.shape[0])

    def __iter__(self) -> Iterator["Tensor"]:
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._value.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return _format(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0:
            return format(self.item(), spec)
        return repr(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        from ..backend import to_numpy

        return (_rebuild, (to_numpy(self._value), self._requires_grad and self._node is None))

    def __deepcopy__(self, memo: dict[Any, Any]) -> "Tensor":
        if self._node is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
                "the moment.  If you were attempting to deepcopy a module, this may be because of a "
                "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return cast("Tensor", memo[id(self)])
        v = self._value
        new = type(self)._make(namespace_of(v).array(v, copy=True), requires_grad=self._requires_grad)
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = _copy.deepcopy(self._grad, memo)
        if hasattr(self, "__dict__") and self.__dict__:
            new.__dict__.update(_copy.deepcopy(self.__dict__, memo))
        return new

    def __copy__(self) -> "Tensor":
        return self.__deepcopy__({})

    # ------------------------------------------------------------------ autograd
    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor w.r.t. graph leaves into their ``.grad``.

        ``gradient`` is required unless the tensor has one element. See
        :func:`ft.autograd.backward`.
        """
        from .backward import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ------------------------------------------------------------------ conversion
    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        """``to(dtype)``, ``to(device)``, ``to(other)``, ``to(device, dtype)``; ``copy=True`` forces a copy."""
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
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

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"ft.{_dt.TYPE_NAMES[self.dtype]}"
        return self.to(dtype)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def float(self) -> "Tensor":
        return _cast(self, _dt.float32)

    def double(self) -> "Tensor":
        return _cast(self, _dt.float64)

    def half(self) -> "Tensor":
        return _cast(self, _dt.float16)

    def long(self) -> "Tensor":
        return _cast(self, _dt.int64)

    def int(self) -> "Tensor":
        return _cast(self, _dt.int32)

    def bool(self) -> "Tensor":
        return _cast(self, _dt.bool)

    def cfloat(self) -> "Tensor":
        return _cast(self, _dt.complex64)

    def cdouble(self) -> "Tensor":
        return _cast(self, _dt.complex128)

    def cpu(self) -> "Tensor":
        """A copy in host memory (this tensor itself when it is there already); differentiable."""
        return _to_device(self, _CPU)

    def cuda(self, device_: Any = None, non_blocking: builtins.bool = False) -> "Tensor":
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

    def clone(self, memory_format: Any = None) -> "Tensor":
        mark = _seq_mark()
        return _rename(fnp.copy(self), "CloneBackward0", mark)

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other: Any) -> "Tensor":
        return _binary(fnp.add, self, other)

    def __radd__(self, other: Any) -> "Tensor":
        return _binary(fnp.add, other, self)

    def __sub__(self, other: Any) -> "Tensor":
        return _binary(fnp.subtract, self, other)

    def __rsub__(self, other: Any) -> "Tensor":
        mark = _seq_mark()
        return _rename(_binary(fnp.subtract, other, self), "RsubBackward1", mark)

    def __mul__(self, other: Any) -> "Tensor":
        return _binary(fnp.multiply, self, other)

    def __rmul__(self, other: Any) -> "Tensor":
        return _binary(fnp.multiply, other, self)

    def __truediv__(self, other: Any) -> "Tensor":
        return _binary(fnp.divide, self, other, true_div=True)

    def __rtruediv__(self, other: Any) -> "Tensor":
        return _binary(fnp.divide, other, self, true_div=True)

    def __floordiv__(self, other: Any) -> "Tensor":
        return _binary(fnp.floor_divide, self, other)

    def __rfloordiv__(self, other: Any) -> "Tensor":
        return _binary(fnp.floor_divide, other, self)

    def __mod__(self, other: Any) -> "Tensor":
        return self.remainder(other)

    def __rmod__(self, other: Any) -> "Tensor":
        return _binary(fnp.remainder, other, self)

    def __pow__(self, other: Any) -> "Tensor":
        return self.pow(other)

    def __rpow__(self, other: Any) -> "Tensor":
        mark = _seq_mark()
        return _rename(_binary(fnp.power, other, self), "PowBackward2", mark)

    def __matmul__(self, other: Any) -> "Tensor":
        return self.matmul(other)

    def __rmatmul__(self, other: Any) -> "Tensor":
        return _as_tensor(other).matmul(self)

    def __neg__(self) -> "Tensor":
        return self.neg()

    def __pos__(self) -> "Tensor":
        return self

    def __abs__(self) -> "Tensor":
        return self.abs()

    def __invert__(self) -> "Tensor":
        if self._value.dtype.kind not in "biu":
            raise TypeError("~ (bitwise_not) is only supported for integer and boolean tensors")
        return _wrap_nondiff(fnp.logical_not(self) if self._value.dtype.kind == "b" else
                             Tensor._make(~self._value))

    def __and__(self, other: Any) -> "Tensor":
        return _logical(fnp.logical_and if self._value.dtype.kind == "b" else fnp.bitwise_and, self, other)

    __rand__ = __and__

    def __or__(self, other: Any) -> "Tensor":
        return _logical(fnp.logical_or if self._value.dtype.kind == "b" else fnp.bitwise_or, self, other)

    __ror__ = __or__

    def __xor__(self, other: Any) -> "Tensor":
        return _logical(fnp.logical_xor if self._value.dtype.kind == "b" else fnp.bitwise_xor, self, other)

    __rxor__ = __xor__

    def add(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        if alpha != 1:
            other = _as_operand(other) * alpha
        return _binary(fnp.add, self, other)

    def sub(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        if alpha != 1:
            other = _as_operand(other) * alpha
        return _binary(fnp.subtract, self, other)

    subtract = sub

    def mul(self, other: Any) -> "Tensor":
        return _binary(fnp.multiply, self, other)

    multiply = mul

    def div(self, other: Any, *, rounding_mode: str | None = None) -> "Tensor":
        if rounding_mode is None:
            return _binary(fnp.divide, self, other, true_div=True)
        if rounding_mode == "floor":
            return _binary(fnp.floor_divide, self, other)
        if rounding_mode == "trunc":
            q = _binary(fnp.divide, self, other, true_div=True)
            return _wrap_nondiff(fnp.trunc(q)).to(q.dtype if self.is_floating_point() else self.dtype)
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")

    divide = div
    true_divide = __truediv__

    def floor_divide(self, other: Any) -> "Tensor":
        return _binary(fnp.floor_divide, self, other)

    def remainder(self, other: Any) -> "Tensor":
        return _binary(fnp.remainder, self, other)

    fmod = remainder

    def pow(self, exponent: Any) -> "Tensor":
        mark = _seq_mark()
        if isinstance(exponent, Tensor) and exponent.dim() > 0 or isinstance(exponent, Tensor) and exponent._requires_grad:
            return _rename(_binary(fnp.power, self, exponent), "PowBackward1", mark)
        if isinstance(exponent, (_pyint, np.integer)) and not isinstance(exponent, _pybool) and self.is_floating_point():
            if exponent == 2:
                return _rename(fnp.square(self), "PowBackward0", mark)
        return _rename(_binary(fnp.power, self, exponent), "PowBackward0", mark)

    def float_power(self, exponent: Any) -> "Tensor":
        return self.double().pow(exponent.double() if isinstance(exponent, Tensor) else exponent)

    def neg(self) -> "Tensor":
        if self._value.dtype.kind == "b":
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        return cast("Tensor", fnp.negative(self))

    negative = neg

    def abs(self) -> "Tensor":
        return cast("Tensor", fnp.abs(self))

    absolute = abs

    def reciprocal(self) -> "Tensor":
        mark = _seq_mark()
        return _rename(_float(self).__rtruediv__(1.0), "ReciprocalBackward0", mark)

    def square(self) -> "Tensor":
        mark = _seq_mark()
        return _rename(fnp.square(self), "PowBackward0", mark)

    def sqrt(self) -> "Tensor":
        return cast("Tensor", fnp.sqrt(_float(self)))

    def rsqrt(self) -> "Tensor":
        mark = _seq_mark()
        return _rename(1.0 / fnp.sqrt(_float(self)), "RsqrtBackward0", mark)

    def exp(self) -> "Tensor":
        return cast("Tensor", fnp.exp(_float(self)))

    def exp2(self) -> "Tensor":
        return _unary("exp2", self)

    def expm1(self) -> "Tensor":
        return _unary("expm1", self)

    def log(self) -> "Tensor":
        return cast("Tensor", fnp.log(_float(self)))

    def log2(self) -> "Tensor":
        return _unary("log2", self)

    def log10(self) -> "Tensor":
        return _unary("log10", self)

    def log1p(self) -> "Tensor":
        return _unary("log1p", self)

    def sin(self) -> "Tensor":
        return cast("Tensor", fnp.sin(_float(self)))

    def cos(self) -> "Tensor":
        return cast("Tensor", fnp.cos(_float(self)))

    def tan(self) -> "Tensor":
        return cast("Tensor", fnp.tan(_float(self)))

    def tanh(self) -> "Tensor":
        return cast("Tensor", fnp.tanh(_float(self)))

    def sinh(self) -> "Tensor":
        return _unary("sinh", self)

    def cosh(self) -> "Tensor":
        return _unary("cosh", self)

    def asin(self) -> "Tensor":
        return _unary("arcsin", self)

    def acos(self) -> "Tensor":
        return _unary("arccos", self)

    def atan(self) -> "Tensor":
        return _unary("arctan", self)

    arcsin, arccos, arctan = asin, acos, atan

    def atan2(self, other: Any) -> "Tensor":
        a, b = _promote(_float(self), other)
        return cast("Tensor", fnp.arctan2(a, b))

    arctan2 = atan2

    def sigmoid(self) -> "Tensor":
        mark = _seq_mark()
        x = _float(self)
        expit = _special("expit")
        out = expit(x) if expit is not None else 0.5 * (fnp.tanh(0.5 * x) + 1.0)
        return _rename(out, "SigmoidBackward0", mark)

    def relu(self) -> "Tensor":
        mark = _seq_mark()
        if self._value.dtype.kind == "b":
            raise RuntimeError('"clamp_min_cpu" not implemented for \'Bool\'')
        return _rename(fnp.where(_cond(self._value > 0), self, _zero_like_scalar(self)), "ReluBackward0", mark)

    def softmax(self, dim: builtins.int, dtype: Any = None) -> "Tensor":
        mark = _seq_mark()
        x = _float(self if dtype is None else self.to(dtype))
        d = _wrap_dim(dim, x.dim())
        m = Tensor._make(namespace_of(x._value).max(x._value, axis=d, keepdims=True)) if x.numel() else 0.0
        e = (x - m).exp()
        return _rename(e / e.sum(d, keepdim=True), "SoftmaxBackward0", mark)

    def log_softmax(self, dim: builtins.int, dtype: Any = None) -> "Tensor":
        mark = _seq_mark()
        x = _float(self if dtype is None else self.to(dtype))
        d = _wrap_dim(dim, x.dim())
        return _rename(x - x.logsumexp(d, keepdim=True), "LogSoftmaxBackward0", mark)

    def logsumexp(self, dim: DimArg, keepdim: builtins.bool = False) -> "Tensor":
        mark = _seq_mark()
        x = _float(self)
        axes = _dims(dim, x.dim())
        raw = x._value
        ns = namespace_of(raw)
        m = ns.max(raw, axis=axes, keepdims=True) if raw.size else ns.zeros((1,) * raw.ndim, raw.dtype)
        m = ns.where(ns.isfinite(m), m, ns.zeros_like(m))
        s = fnp.sum(fnp.exp(x - Tensor._make(m)), axis=axes, keepdims=True)
        out = fnp.log(s) + Tensor._make(m)
        if not keepdim:
            out = fnp.squeeze(out, axis=axes if axes is not None else tuple(range(raw.ndim)))
        return _rename(out, "LogsumexpBackward0", mark)

    def sign(self) -> "Tensor":
        return _wrap_nondiff(fnp.sign(self))

    sgn = sign

    def floor(self) -> "Tensor":
        return _wrap_nondiff(fnp.floor(self))

    def ceil(self) -> "Tensor":
        return _wrap_nondiff(fnp.ceil(self))

    def round(self, decimals: builtins.int = 0) -> "Tensor":
        return _wrap_nondiff(fnp.round(self, decimals) if decimals else fnp.rint(self))

    def trunc(self) -> "Tensor":
        return _wrap_nondiff(fnp.trunc(self))

    def frac(self) -> "Tensor":
        return self - self.trunc()

    def clamp(self, min: Any = None, max: Any = None) -> "Tensor":  # noqa: A002
        """Limit to ``[min, max]``, with PyTorch 2.15's gradient.

        Number bounds: the gradient passes only strictly inside, ``min < x < max``
        (zero at a bound). Tensor bounds: ``minimum(maximum(x, min), max)``, so a tie
        with a bound splits the gradient evenly between ``x`` and the bound.
        """
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        mark = _seq_mark()
        out = self
        if min is not None:
            lo = min if isinstance(min, Tensor) else _scalar_like(min, self)
            a, b = _promote(out, lo)
            out = fnp.maximum(a, b) if isinstance(min, Tensor) else fnp.where(_cond(_raw(a) <= _raw(b)), b, a)
        if max is not None:
            hi = max if isinstance(max, Tensor) else _scalar_like(max, self)
            a, b = _promote(out, hi)
            out = fnp.minimum(a, b) if isinstance(max, Tensor) else fnp.where(_cond(_raw(a) >= _raw(b)), b, a)
        if not isinstance(out, Tensor):
            out = Tensor._make(_graph._as_array(out))
        name = "ClampBackward1" if not isinstance(min, Tensor) and not isinstance(max, Tensor) else "ClampBackward0"
        return _rename(out, name if min is not None and max is not None else
                       ("ClampMinBackward0" if max is None else "ClampMaxBackward0"), mark)

    clip = clamp

    def clamp_min(self, min: Any) -> "Tensor":  # noqa: A002
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> "Tensor":  # noqa: A002
        return self.clamp(max=max)

    def maximum(self, other: Any) -> "Tensor":
        a, b = _promote(self, other)
        return cast("Tensor", fnp.maximum(a, b))

    def minimum(self, other: Any) -> "Tensor":
        a, b = _promote(self, other)
        return cast("Tensor", fnp.minimum(a, b))

    def lerp(self, end: Any, weight: Any) -> "Tensor":
        return cast("Tensor", self + weight * (end - self))

    def where(self, condition: Any, other: Any) -> "Tensor":
        from .ops import where

        return cast("Tensor", where(condition, self, other))

    def masked_fill(self, mask: Any, value: Any) -> "Tensor":
        mark = _seq_mark()
        m = _raw(mask)
        if getattr(m, "dtype", None) is not None and m.dtype.kind != "b":
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {_dt.from_numpy_dtype(m.dtype)}")
        v = value if isinstance(value, Tensor) else _scalar_like(value, self)
        v = _cast(_as_tensor(v), self.dtype) if isinstance(v, Tensor) else v
        return _rename(_as_tensor(fnp.where(_cond(m), v, self)), "MaskedFillBackward0", mark)

    def conj(self) -> "Tensor":
        return fnp.conj(self) if self.is_complex() else self

    def conj_physical(self) -> "Tensor":
        return self.conj()

    def resolve_conj(self) -> "Tensor":
        return self

    @property
    def real(self) -> "Tensor":
        if not self.is_complex():
            return self
        return cast("Tensor", fnp.real(self))

    @property
    def imag(self) -> "Tensor":
        if not self.is_complex():
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return cast("Tensor", fnp.imag(self))

    def angle(self) -> "Tensor":
        return fnp.angle(self) if self.is_complex() else _unary("arctan2", self) * 0

    # ------------------------------------------------------------------ comparisons
    def __eq__(self, other: Any) -> "Tensor":  # type: ignore[override]
        return _compare(fnp.equal, self, other)

    def __ne__(self, other: Any) -> "Tensor":  # type: ignore[override]
        return _compare(fnp.not_equal, self, other)

    def __lt__(self, other: Any) -> "Tensor":
        return _compare(fnp.less, self, other)

    def __le__(self, other: Any) -> "Tensor":
        return _compare(fnp.less_equal, self, other)

    def __gt__(self, other: Any) -> "Tensor":
        return _compare(fnp.greater, self, other)

    def __ge__(self, other: Any) -> "Tensor":
        return _compare(fnp.greater_equal, self, other)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__
    greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne

    def equal(self, other: "Tensor") -> builtins.bool:
        """True if both tensors have the same shape and elements."""
        o = _as_tensor(other)
        if self.shape != o.shape:
            return False
        return _pybool(namespace_of(self._value).all(self._value == o._value))

    def allclose(self, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                 equal_nan: builtins.bool = False) -> builtins.bool:
        o = _as_tensor(other)
        return _pybool(namespace_of(self._value).allclose(self._value, o._value, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def isclose(self, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                equal_nan: builtins.bool = False) -> "Tensor":
        o = _as_tensor(other)
        return Tensor._make(namespace_of(self._value).isclose(self._value, o._value, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def isnan(self) -> "Tensor":
        return _wrap_nondiff(fnp.isnan(self))

    def isinf(self) -> "Tensor":
        return _wrap_nondiff(fnp.isinf(self))

    def isfinite(self) -> "Tensor":
        return _wrap_nondiff(fnp.isfinite(self))

    def logical_not(self) -> "Tensor":
        return _wrap_nondiff(fnp.logical_not(self))

    def logical_and(self, other: Any) -> "Tensor":
        return _logical(fnp.logical_and, self, other)

    def logical_or(self, other: Any) -> "Tensor":
        return _logical(fnp.logical_or, self, other)

    def logical_xor(self, other: Any) -> "Tensor":
        return _logical(fnp.logical_xor, self, other)

    # ------------------------------------------------------------------ reductions
    def sum(self, dim: DimArg = None, keepdim: builtins.bool = False, *, dtype: Any = None,
            axis: Any = None) -> "Tensor":
        mark = _seq_mark()
        dim = axis if dim is None else dim
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind in "biu" and dtype is None:
            x = _cast(x, _dt.int64)
        axes = _dims(dim, x.dim())
        out = fnp.sum(x, axis=axes, keepdims=keepdim)
        return _rename(out, "SumBackward0" if dim is None else "SumBackward1", mark)

    def nansum(self, dim: DimArg = None, keepdim: builtins.bool = False) -> "Tensor":
        return cast("Tensor", fnp.where(self._value != self._value, 0, self).sum(dim, keepdim))

    def mean(self, dim: DimArg = None, keepdim: builtins.bool = False, *, dtype: Any = None,
             axis: Any = None) -> "Tensor":
        mark = _seq_mark()
        dim = axis if dim is None else dim
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind not in "fc":
            raise NotImplementedError(  # a RuntimeError subclass, as PyTorch 2.15 raises
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {_dt.SCALAR_NAMES[x.dtype]}"
            )
        axes = _dims(dim, x.dim())
        out = fnp.mean(x, axis=axes, keepdims=keepdim)
        return _rename(out, "MeanBackward0" if dim is None else "MeanBackward1", mark)

    def prod(self, dim: DimArg = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> "Tensor":
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind in "biu" and dtype is None:
            x = _cast(x, _dt.int64)
        return cast("Tensor", fnp.prod(x, axis=None if dim is None else _wrap_dim(dim, x.dim()), keepdims=keepdim))

    def _reduce_extreme(self, which: str, dim: Any, keepdim: builtins.bool) -> Any:
        if dim is None:
            if self.numel() == 0:
                raise RuntimeError(f"{which}(): Expected reduction dim to be specified for input.numel() == 0. "
                                   f"Specify the reduction dim with the 'dim' argument.")
            mark = _seq_mark()
            out = (fnp.max if which == "max" else fnp.min)(self)
            return _rename(out, "MaxBackward1" if which == "max" else "MinBackward1", mark)
        if isinstance(dim, Tensor):
            return self.maximum(dim) if which == "max" else self.minimum(dim)
        d = _wrap_dim(dim, self.dim())
        raw = self._value
        ns = namespace_of(raw)
        idx = (ns.argmax if which == "max" else ns.argmin)(raw, axis=d, keepdims=True) if raw.ndim else ns.zeros((), np.int64)
        mark = _seq_mark()
        if raw.ndim:
            vals = fnp.take_along_axis(self, idx, axis=d)
            if not keepdim:
                vals = fnp.squeeze(vals, axis=d)
                idx = ns.squeeze(idx, axis=d)
        else:
            vals = fnp.copy(self)
        vals = _rename(vals, "MaxBackward0" if which == "max" else "MinBackward0", mark)
        return MaxMin(vals, Tensor._make(idx.astype(np.int64)))

    def max(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """Full maximum, or ``(values, indices)`` along ``dim``; ``max(other)`` is elementwise."""
        return self._reduce_extreme("max", dim, keepdim)

    def min(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        return self._reduce_extreme("min", dim, keepdim)

    def amax(self, dim: DimArg = (), keepdim: builtins.bool = False) -> "Tensor":
        mark = _seq_mark()
        return _rename(fnp.max(self, axis=_dims(dim, self.dim()), keepdims=keepdim), "AmaxBackward0", mark)

    def amin(self, dim: DimArg = (), keepdim: builtins.bool = False) -> "Tensor":
        mark = _seq_mark()
        return _rename(fnp.min(self, axis=_dims(dim, self.dim()), keepdims=keepdim), "AminBackward0", mark)

    def argmax(self, dim: DimArg = None, keepdim: builtins.bool = False) -> "Tensor":
        raw = self._value
        ns = namespace_of(raw)
        if dim is None:
            return Tensor._make(ns.asarray(ns.argmax(raw)).astype(np.int64))
        return Tensor._make(ns.argmax(raw, axis=_wrap_dim(dim, raw.ndim), keepdims=keepdim).astype(np.int64))

    def argmin(self, dim: DimArg = None, keepdim: builtins.bool = False) -> "Tensor":
        raw = self._value
        ns = namespace_of(raw)
        if dim is None:
            return Tensor._make(ns.asarray(ns.argmin(raw)).astype(np.int64))
        return Tensor._make(ns.argmin(raw, axis=_wrap_dim(dim, raw.ndim), keepdims=keepdim).astype(np.int64))

    def argsort(self, dim: builtins.int = -1, descending: builtins.bool = False,
                stable: builtins.bool = False) -> "Tensor":
        raw = self._value
        ns = namespace_of(raw)
        d = _wrap_dim(dim, raw.ndim)
        idx = ns.argsort(-raw if descending else raw, axis=d, kind="stable")
        return Tensor._make(idx.astype(np.int64))

    def sort(self, dim: builtins.int = -1, descending: builtins.bool = False, stable: builtins.bool = False) -> Any:
        idx = self.argsort(dim, descending)
        vals = self.gather(_wrap_dim(dim, self.dim()), idx) if self.dim() else self.clone()
        return MaxMin(vals, idx)

    def topk(self, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True,
             sorted: builtins.bool = True) -> Any:  # noqa: A002
        idx = self.argsort(dim, descending=largest)
        d = _wrap_dim(dim, self.dim())
        idx = idx.narrow(d, 0, k).contiguous()
        return MaxMin(self.gather(d, idx), idx)

    def _var(self, dim: Any, unbiased: Any, keepdim: builtins.bool, correction: Any, std: builtins.bool) -> "Tensor":
        if isinstance(unbiased, (_pyint, tuple, list)) and not isinstance(unbiased, _pybool) and dim is None:
            dim, unbiased = unbiased, True  # var(dim) positional
        ddof = correction if correction is not None else (1 if unbiased in (None, True) else 0)
        x = _float(self)
        mark = _seq_mark()
        out = (fnp.std if std else fnp.var)(x, axis=_dims(dim, x.dim()), ddof=ddof, keepdims=keepdim)
        return _rename(out, "StdBackward0" if std else "VarBackward0", mark)

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *,
            correction: Any = None) -> "Tensor":
        return self._var(dim, unbiased, keepdim, correction, False)

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *,
            correction: Any = None) -> "Tensor":
        return self._var(dim, unbiased, keepdim, correction, True)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> "Tensor":
        mark = _seq_mark()
        x = _float(self)
        axes = _dims(dim, x.dim())
        a = fnp.abs(x) if x.is_complex() or p not in (2, "fro") else x
        if p in (2, "fro", None):
            sq = a * a if not x.is_complex() else fnp.real(x * fnp.conj(x))
            out = fnp.sqrt(fnp.sum(sq, axis=axes, keepdims=keepdim))
        elif p == 1:
            out = fnp.sum(fnp.abs(x), axis=axes, keepdims=keepdim)
        elif p in (float("inf"), "inf"):
            out = fnp.max(fnp.abs(x), axis=axes, keepdims=keepdim)
        else:
            out = fnp.sum(fnp.abs(x) ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)
        return _rename(out, "LinalgVectorNormBackward0", mark)

    def cumsum(self, dim: builtins.int, dtype: Any = None) -> "Tensor":
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind in "biu" and dtype is None:
            x = _cast(x, _dt.int64)
        return cast("Tensor", fnp.cumsum(x, axis=_wrap_dim(dim, x.dim())))

    def cumprod(self, dim: builtins.int, dtype: Any = None) -> "Tensor":
        x = self if dtype is None else self.to(dtype)
        return cast("Tensor", fnp.cumprod(x, axis=_wrap_dim(dim, x.dim())))

    def all(self, dim: DimArg = None, keepdim: builtins.bool = False) -> "Tensor":
        return Tensor._make(np.asarray(namespace_of(self._value).all(self._value, axis=_dims(dim, self.dim()), keepdims=keepdim)))

    def any(self, dim: DimArg = None, keepdim: builtins.bool = False) -> "Tensor":
        return Tensor._make(np.asarray(namespace_of(self._value).any(self._value, axis=_dims(dim, self.dim()), keepdims=keepdim)))

    def count_nonzero(self, dim: DimArg = None) -> "Tensor":
        return Tensor._make(np.asarray(namespace_of(self._value).count_nonzero(self._value, axis=_dims(dim, self.dim()))).astype(np.int64))

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, other: Any) -> "Tensor":
        other = _as_tensor(other)
        if self.dim() == 0 or other.dim() == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                               f"{self.dim()}D and {other.dim()}D")
        a, b = _promote(self, other)
        mark = _seq_mark()
        out = fnp.matmul(a, b)
        nd = (a.dim(), b.dim())
        name = {(2, 2): "MmBackward0", (1, 1): "DotBackward0", (2, 1): "MvBackward0", (3, 3): "BmmBackward0"}.get(nd, "MatmulBackward0")
        return _rename(out, name, mark)

    def mm(self, mat2: "Tensor") -> "Tensor":
        if self.dim() != 2 or _as_tensor(mat2).dim() != 2:
            raise RuntimeError("self must be a matrix" if self.dim() != 2 else "mat2 must be a matrix")
        return self.matmul(mat2)

    def bmm(self, mat2: "Tensor") -> "Tensor":
        if self.dim() != 3 or _as_tensor(mat2).dim() != 3:
            raise RuntimeError("batch1 must be a 3D tensor" if self.dim() != 3 else "batch2 must be a 3D tensor")
        return self.matmul(mat2)

    def mv(self, vec: "Tensor") -> "Tensor":
        return self.matmul(vec)

    def dot(self, other: "Tensor") -> "Tensor":
        if self.dim() != 1 or _as_tensor(other).dim() != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.dim()}D and {_as_tensor(other).dim()}D tensors")
        return self.matmul(other)

    def inverse(self) -> "Tensor":
        from . import linalg

        return linalg.inv(self)

    def det(self) -> "Tensor":
        from . import linalg

        return linalg.det(self)

    def logdet(self) -> "Tensor":
        from . import linalg

        from .ops import where

        sign, logabs = linalg.slogdet(self)
        if self.is_complex():
            return cast("Tensor", logabs + sign.log())
        return cast("Tensor", where(sign._value < 0, float("nan"), where(sign._value == 0, float("-inf"), logabs)))

    def cholesky(self, upper: builtins.bool = False) -> "Tensor":
        from . import linalg

        return linalg.cholesky(self, upper=upper)

    def outer(self, vec2: "Tensor") -> "Tensor":
        return self.unsqueeze(1) * _as_tensor(vec2).unsqueeze(0)

    ger = outer

    # ------------------------------------------------------------------ shapes
    def reshape(self, *shape: SizeArg) -> "Tensor":
        dims = _shape_arg(shape)
        mark = _seq_mark()
        out = fnp.reshape(self, dims)
        return _rename(out, "ViewBackward0" if out._base is not None else "UnsafeViewBackward0", mark)

    def view(self, *shape: Any) -> "Tensor":
        if len(shape) == 1 and isinstance(shape[0], (_dt.dtype, np.dtype)):
            raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
        shape = _shape_arg(shape)
        out = self.reshape(shape)
        if out._value.size and out._base is None and self._value.size > 1 and not _shares(out._value, self._value):
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead."
            )
        return out

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.view(other.shape)

    def reshape_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)

    def flatten(self, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> "Tensor":
        nd = self.dim()
        if nd == 0:
            return self.reshape(1)
        s, e = _wrap_dim(start_dim, nd), _wrap_dim(end_dim, nd)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shp = self.shape
        n = 1
        for k in shp[s:e + 1]:
            n *= k
        return self.reshape(tuple(shp[:s]) + (n,) + tuple(shp[e + 1:]))

    def unflatten(self, dim: builtins.int, sizes: Sequence[builtins.int]) -> "Tensor":
        d = _wrap_dim(dim, self.dim())
        shp = tuple(self.shape)
        sizes = list(sizes)
        if -1 in sizes:
            known = 1
            for s in sizes:
                if s != -1:
                    known *= s
            sizes[sizes.index(-1)] = shp[d] // known
        return self.reshape(shp[:d] + tuple(sizes) + shp[d + 1:])

    def squeeze(self, dim: DimArg = None) -> "Tensor":
        mark = _seq_mark()
        if dim is None:
            axes = tuple(i for i, s in enumerate(self.shape) if s == 1)
            name = "SqueezeBackward0"
        else:
            axes = tuple(d for d in (_dims(dim, self.dim()) or ()) if self.shape[d] == 1)
            name = "SqueezeBackward1" if not isinstance(dim, (tuple, list)) else "SqueezeBackward2"
        if not axes:
            return _rename(fnp.reshape(self, tuple(self.shape)), name, mark)
        return _rename(fnp.squeeze(self, axis=axes), name, mark)

    def unsqueeze(self, dim: builtins.int) -> "Tensor":
        d = _wrap_dim(dim, self.dim() + 1)
        mark = _seq_mark()
        return _rename(fnp.expand_dims(self, d), "UnsqueezeBackward0", mark)

    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> "Tensor":
        nd = self.dim()
        if nd == 0:
            return self
        mark = _seq_mark()
        return _rename(fnp.swapaxes(self, _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)), "TransposeBackward0", mark)

    swapaxes = swapdims = transpose

    def t(self) -> "Tensor":
        if self.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        if self.dim() < 2:
            return self
        mark = _seq_mark()
        return _rename(fnp.transpose(self), "TBackward0", mark)

    def t_(self) -> "Tensor":
        if self.dim() > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return self.transpose_(0, 1) if self.dim() == 2 else self

    @property
    def T(self) -> "Tensor":
        if self.dim() < 2:
            return self
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self) -> "Tensor":
        if self.dim() < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self) -> "Tensor":
        return self.T.conj()

    @property
    def mH(self) -> "Tensor":
        return self.mT.conj()

    def adjoint(self) -> "Tensor":
        return self.mH

    def permute(self, *dims: Any) -> "Tensor":
        dims = _shape_arg(dims)
        nd = self.dim()
        if len(dims) != nd:
            raise RuntimeError(
                f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                f"desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}"
            )
        perm = tuple(_wrap_dim(d, nd) for d in dims)
        if len(set(perm)) != nd:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        mark = _seq_mark()
        return _rename(fnp.transpose(self, perm), "PermuteBackward0", mark)

    def movedim(self, source: Any, destination: Any) -> "Tensor":
        return cast("Tensor", fnp.moveaxis(self, source, destination))

    moveaxis = movedim

    def expand(self, *sizes: Any) -> "Tensor":
        sizes = _shape_arg(sizes)
        shp = tuple(self.shape)
        if len(sizes) < len(shp):
            raise RuntimeError(
                f"expand(ft.{_dt.TYPE_NAMES[self.dtype]}{{[{', '.join(map(str, shp))}]}}, size=[{', '.join(map(str, sizes))}]): "
                f"the number of sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions "
                f"in the tensor ({len(shp)})"
            )
        lead = len(sizes) - len(shp)
        target: Any = []
        for i, s in enumerate(sizes):
            if s == -1:
                if i < lead:
                    raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
                target.append(shp[i - lead])
            else:
                if i >= lead and shp[i - lead] not in (1, s):
                    raise RuntimeError(
                        f"The expanded size of the tensor ({s}) must match the existing size ({shp[i - lead]}) at "
                        f"non-singleton dimension {i}.  Target sizes: [{', '.join(map(str, sizes))}].  Tensor sizes: "
                        f"[{', '.join(map(str, shp))}]"
                    )
                target.append(s)
        mark = _seq_mark()
        target = tuple(target)
        if target == shp:
            return _rename(fnp.reshape(self, shp), "ExpandBackward0", mark)
        return _rename(fnp.broadcast_to(self, target), "ExpandBackward0", mark)

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other.shape)

    def broadcast_to(self, size: Any) -> "Tensor":
        return self.expand(*size)

    def repeat(self, *sizes: Any) -> "Tensor":
        sizes = _shape_arg(sizes)
        if len(sizes) < self.dim():
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
        mark = _seq_mark()
        x = self.reshape((1,) * (len(sizes) - self.dim()) + tuple(self.shape))
        return _rename(fnp.tile(x, sizes), "RepeatBackward0", mark)

    def tile(self, *dims: Any) -> "Tensor":
        dims = _shape_arg(dims)
        if len(dims) < self.dim():
            dims = (1,) * (self.dim() - len(dims)) + tuple(dims)
        return self.repeat(*dims)

    def repeat_interleave(self, repeats: Any, dim: Any = None) -> "Tensor":
        r = _raw(repeats)
        if dim is None:
            return cast("Tensor", fnp.repeat(self.reshape(-1), r, axis=0))
        return cast("Tensor", fnp.repeat(self, r, axis=_wrap_dim(dim, self.dim())))

    def flip(self, *dims: Any) -> "Tensor":
        dims = _shape_arg(dims)
        return cast("Tensor", fnp.flip(self, axis=tuple(_wrap_dim(d, self.dim()) for d in dims)))

    def roll(self, shifts: Any, dims: Any = None) -> "Tensor":
        return cast("Tensor", fnp.roll(self, shifts, axis=dims))

    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> "Tensor":
        d = _wrap_dim(dim, self.dim())
        start = _pyint(start)
        if start < 0:
            start += self.shape[d]
        idx = (slice(None),) * d + (slice(start, start + _pyint(length)),)
        return self[idx]

    def select(self, dim: builtins.int, index: builtins.int) -> "Tensor":
        d = _wrap_dim(dim, self.dim())
        return self[(slice(None),) * d + (_pyint(index),)]

    def unbind(self, dim: builtins.int = 0) -> tuple[Any, ...]:
        d = _wrap_dim(dim, self.dim())
        return tuple(self.select(d, i) for i in range(self.shape[d]))

    def split(self, split_size: Any, dim: builtins.int = 0) -> tuple[Any, ...]:
        d = _wrap_dim(dim, self.dim())
        n = self.shape[d]
        if isinstance(split_size, (list, tuple)):
            if builtins.sum(split_size) != n:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension "
                    f"{d}), but got split_sizes={list(split_size)}"
                )
            sizes = list(split_size)
        else:
            sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    def chunk(self, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Any, ...]:
        d = _wrap_dim(dim, self.dim())
        n = self.shape[d]
        size = -(-n // chunks)
        return self.split(size, d) if n else (self,)

    def diagonal(self, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> "Tensor":
        return cast("Tensor", fnp.diagonal(self, offset, _wrap_dim(dim1, self.dim()), _wrap_dim(dim2, self.dim())))

    def diag(self, diagonal: builtins.int = 0) -> "Tensor":
        if self.dim() == 1:
            return _as_tensor(fnp.diag(self, diagonal))
        return self.diagonal(diagonal)

    def trace(self) -> "Tensor":
        return self.diagonal().sum()

    def tril(self, diagonal: builtins.int = 0) -> "Tensor":
        ns = namespace_of(self._value)
        mask = ns.tri(*self.shape[-2:], k=diagonal, dtype=bool)
        return cast("Tensor", fnp.where(mask, self, _zero_like_scalar(self)))

    def triu(self, diagonal: builtins.int = 0) -> "Tensor":
        ns = namespace_of(self._value)
        mask = ~ns.tri(*self.shape[-2:], k=diagonal - 1, dtype=bool)
        return cast("Tensor", fnp.where(mask, self, _zero_like_scalar(self)))

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, idx: Any) -> "Tensor":
        idx = _to_raw_index(idx)
        tup = idx if isinstance(idx, tuple) else (idx,)
        mark = _seq_mark()
        if _is_basic(tup):
            if Ellipsis not in tup:
                tup = tup + (Ellipsis,)  # NumPy then returns a 0-d view rather than a scalar copy
            out = fnp.indexing.getitem(self, tup)
            ints = any(isinstance(i, (_pyint, np.integer)) for i in tup)
            slices = any(isinstance(i, slice) for i in tup)
            name = "SelectBackward0" if ints and not slices else "SliceBackward0" if slices and not ints else (
                "SliceBackward0" if slices else "AliasBackward0")
            if any(i is None for i in tup):
                name = "UnsqueezeBackward0" if not ints and not slices else name
            return _rename(out, name, mark)
        return _rename(fnp.indexing.getitem(self, idx), "IndexBackward0", mark)

    def __setitem__(self, idx: Any, value: Any) -> None:
        idx = _to_raw_index(idx)
        tup = idx if isinstance(idx, tuple) else (idx,)
        if _is_basic(tup):
            view = self[tup]
            view.copy_(value)
            return
        mark = _seq_mark()
        v = value if isinstance(value, Tensor) else _scalar_like(value, self) if not isinstance(value, (list, np.ndarray)) else _as_tensor(value)
        if isinstance(v, Tensor):
            v = _cast(v, self.dtype)
        out = fnp.indexing.IndexUpdateRef(self, idx).set(v)
        out = _as_tensor(out)
        _rename(out, "IndexPutBackward0", mark)
        _finish_inplace(self, out, mark)

    def gather(self, dim: builtins.int, index: "Tensor") -> "Tensor":
        mark = _seq_mark()
        return _rename(fnp.take_along_axis(self, _raw(index), axis=_wrap_dim(dim, self.dim())), "GatherBackward0", mark)

    def index_select(self, dim: builtins.int, index: "Tensor") -> "Tensor":
        d = _wrap_dim(dim, self.dim())
        mark = _seq_mark()
        idx = (slice(None),) * d + (_raw(index),)
        return _rename(fnp.indexing.getitem(self, idx), "IndexSelectBackward0", mark)

    def masked_select(self, mask: "Tensor") -> "Tensor":
        m = _raw(mask)
        return self.expand(*np.broadcast_shapes(tuple(self.shape), m.shape))[np.broadcast_to(m, np.broadcast_shapes(tuple(self.shape), m.shape))]

    def take(self, index: "Tensor") -> "Tensor":
        return self.reshape(-1)[_raw(index)]

    def nonzero(self, as_tuple: builtins.bool = False) -> Any:
        raw = self._value
        nz = namespace_of(raw).nonzero(raw)
        if as_tuple:
            return tuple(Tensor._make(i.astype(np.int64)) for i in nz)
        return Tensor._make(namespace_of(raw).stack(nz, axis=-1).astype(np.int64) if nz else namespace_of(raw).zeros((0, 0), np.int64))

    # ------------------------------------------------------------------ in-place
    def _inplace(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> "Tensor":
        mark = _seq_mark()
        out = fn(self, *args, **kwargs)
        return _finish_inplace(self, _as_tensor(out), mark)

    def add_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        return self._inplace(Tensor.add, other, alpha=alpha)

    def sub_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        return self._inplace(Tensor.sub, other, alpha=alpha)

    def mul_(self, other: Any) -> "Tensor":
        return self._inplace(Tensor.mul, other)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> "Tensor":
        return self._inplace(Tensor.div, other, rounding_mode=rounding_mode)

    def pow_(self, exponent: Any) -> "Tensor":
        return self._inplace(Tensor.pow, exponent)

    def neg_(self) -> "Tensor":
        return self._inplace(Tensor.neg)

    def abs_(self) -> "Tensor":
        return self._inplace(Tensor.abs)

    def exp_(self) -> "Tensor":
        return self._inplace(Tensor.exp)

    def log_(self) -> "Tensor":
        return self._inplace(Tensor.log)

    def sqrt_(self) -> "Tensor":
        return self._inplace(Tensor.sqrt)

    def sin_(self) -> "Tensor":
        return self._inplace(Tensor.sin)

    def cos_(self) -> "Tensor":
        return self._inplace(Tensor.cos)

    def tanh_(self) -> "Tensor":
        return self._inplace(Tensor.tanh)

    def sigmoid_(self) -> "Tensor":
        return self._inplace(Tensor.sigmoid)

    def relu_(self) -> "Tensor":
        return self._inplace(Tensor.relu)

    def reciprocal_(self) -> "Tensor":
        return self._inplace(Tensor.reciprocal)

    def square_(self) -> "Tensor":
        return self._inplace(Tensor.square)

    def clamp_(self, min: Any = None, max: Any = None) -> "Tensor":  # noqa: A002
        return self._inplace(Tensor.clamp, min, max)

    clip_ = clamp_

    def clamp_min_(self, min: Any) -> "Tensor":  # noqa: A002
        return self._inplace(Tensor.clamp, min, None)

    def clamp_max_(self, max: Any) -> "Tensor":  # noqa: A002
        return self._inplace(Tensor.clamp, None, max)

    def masked_fill_(self, mask: Any, value: Any) -> "Tensor":
        return self._inplace(Tensor.masked_fill, mask, value)

    def lerp_(self, end: Any, weight: Any) -> "Tensor":
        return self._inplace(Tensor.lerp, end, weight)

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> "Tensor":
        return self._inplace(lambda s: s + value * tensor1 * tensor2)

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> "Tensor":
        return self._inplace(lambda s: s + value * tensor1 / tensor2)

    def copy_(self, src: Any, non_blocking: builtins.bool = False) -> "Tensor":
        """Copy ``src`` (broadcast, cast to this dtype) into this tensor, in place."""
        src = _as_tensor(src)
        if src.dim() > self.dim() or np.broadcast_shapes(tuple(src.shape), tuple(self.shape)) != tuple(self.shape):
            raise RuntimeError(
                f"output with shape [{', '.join(map(str, self.shape))}] doesn't match the broadcast shape "
                f"[{', '.join(map(str, np.broadcast_shapes(tuple(src.shape), tuple(self.shape))))}]"
            )
        mark = _seq_mark()
        s = _cast(src, self.dtype) if src.dtype != self.dtype else src
        if not (s._requires_grad or self._requires_grad) or not _mode.enabled:
            out = s
        else:
            ns = namespace_of(self._value)
            cond = ns.ones((), dtype=bool)
            out = _as_tensor(fnp.where(cond, fnp.broadcast_to(s, tuple(self.shape)), self))
            _rename(out, "CopyBackwards", mark)
        return _finish_inplace(self, out, mark, check_dtype=False)

    def fill_(self, value: Any) -> "Tensor":
        v = value if isinstance(value, Tensor) else Tensor._make(namespace_of(self._value).asarray(value, dtype=self._value.dtype))
        mark = _seq_mark()
        if isinstance(value, Tensor) and value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions.")
        out = self._fill_like(v)
        _rename(out, "FillBackward0" if not isinstance(value, Tensor) else "FillBackward1", mark)
        return _finish_inplace(self, out, mark, check_dtype=False)

    def _fill_like(self, v: "Tensor") -> "Tensor":
        if not _mode.enabled or not (self._requires_grad or v._requires_grad):
            return v
        ns = namespace_of(self._value)
        return _as_tensor(fnp.where(ns.ones((), dtype=bool), fnp.broadcast_to(_cast(v, self.dtype), tuple(self.shape)), self))

    def zero_(self) -> "Tensor":
        mark = _seq_mark()
        v = Tensor._make(namespace_of(self._value).zeros((), dtype=self._value.dtype))
        out = self._fill_like(v)
        _rename(out, "ZeroBackward0", mark)
        return _finish_inplace(self, out, mark, check_dtype=False)

    def uniform_(self, a: builtins.float = 0.0, b: builtins.float = 1.0, generator: Any = None) -> "Tensor":
        from .creation import _rng

        with _no_record():
            vals = _rng(generator).uniform(a, b, size=tuple(self.shape))
        return self._overwrite(vals)

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0, generator: Any = None) -> "Tensor":
        from .creation import _rng

        vals = _rng(generator).normal(mean, std, size=tuple(self.shape))
        return self._overwrite(vals)

    def bernoulli_(self, p: builtins.float = 0.5, generator: Any = None) -> "Tensor":
        from .creation import _rng

        vals = _rng(generator).random(size=tuple(self.shape)) < p
        return self._overwrite(vals)

    def _overwrite(self, host_values: np.ndarray) -> "Tensor":
        ns = namespace_of(self._value)
        v = Tensor._make(ns.asarray(host_values.astype(self._value.dtype)))
        mark = _seq_mark()
        return _finish_inplace(self, self._fill_like(v), mark, check_dtype=False)

    def __iadd__(self, other: Any) -> "Tensor":
        return self.add_(other)

    def __isub__(self, other: Any) -> "Tensor":
        return self.sub_(other)

    def __imul__(self, other: Any) -> "Tensor":
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> "Tensor":
        return self.div_(other)

    def __ipow__(self, other: Any) -> "Tensor":
        return self.pow_(other)

    # ------------------------------------------------------------------ new_* factories
    def new_zeros(self, *size: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> "Tensor":
        from .creation import zeros

        return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> "Tensor":
        from .creation import ones

        return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> "Tensor":
        from .creation import full

        return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> "Tensor":
        from .creation import empty

        return empty(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> "Tensor":
        from .creation import tensor

        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new(self, *args: Any) -> "Tensor":
        """Legacy constructor: ``x.new(2, 3)`` is uninitialised with ``x``'s dtype, ``x.new([1, 2])``
        converts data to ``x``'s dtype, ``x.new()`` is empty and ``x.new(t)`` is ``t`` itself."""
        from .creation import empty, tensor

        if not args:
            return empty(0, dtype=self.dtype)
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0]
        if builtins.all(isinstance(a, (int, np.integer)) for a in args) or (
                len(args) == 1 and isinstance(args[0], Size)):
            return empty(*args, dtype=self.dtype)
        if len(args) == 1:
            return tensor(args[0], dtype=self.dtype)
        raise TypeError(f"new(): expected sizes (ints) or one data argument, got {args!r}")

    # ------------------------------------------------------------------ metadata changed in place
    def _check_meta_inplace(self, op: str) -> None:
        if self._requires_grad:
            if self._node is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise NotImplementedError(f"{op} on a tensor with autograd history is not supported here; use the "
                                      f"out-of-place form (see docs/tensor.md)")
        if self._base is not None:
            raise NotImplementedError(f"{op} on a view is not supported here; call it on the base tensor or use "
                                      f"the out-of-place form")

    def _set_value_inplace(self, value: Any) -> "Tensor":
        self._value = value
        self._vc[0] += 1
        return self

    def transpose_(self, dim0: builtins.int, dim1: builtins.int) -> "Tensor":
        """In-place ``transpose`` (of a tensor that does not require grad).

        Example::

            t = ft.zeros(2, 3); t.transpose_(0, 1)   # t.shape == (3, 2)
        """
        self._check_meta_inplace("transpose_()")
        return self._set_value_inplace(self.transpose(dim0, dim1)._value)

    swapdims_ = swapaxes_ = transpose_

    def resize_(self, *sizes: Any) -> "Tensor":
        """Resize in place, keeping the first elements in row-major order; new elements are zero
        (PyTorch leaves them uninitialised). Refused for tensors that require grad, as in PyTorch.

        Example::

            t = ft.tensor([1., 2., 3., 4.]); t.resize_(2, 2)
        """
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        self._check_meta_inplace("resize_()")
        shape = tuple(int(d) for d in (sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list))
                                       else sizes))
        if builtins.any(d < 0 for d in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
        xp = namespace_of(self._value)
        flat = xp.reshape(self._value, (-1,))
        n = int(np.prod(shape, dtype=np.int64))
        new = xp.zeros(n, dtype=self._value.dtype)
        k = builtins.min(n, flat.shape[0])
        new[:k] = flat[:k]
        return self._set_value_inplace(xp.reshape(new, shape))

    def resize_as_(self, other: "Tensor") -> "Tensor":
        return self.resize_(tuple(other.shape))

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


_UFUNC_OPS = {
    "add": Tensor.__add__, "subtract": Tensor.__sub__, "multiply": Tensor.__mul__, "true_divide": Tensor.__truediv__,
    "divide": Tensor.__truediv__, "power": Tensor.__pow__, "matmul": Tensor.__matmul__,
    "equal": Tensor.__eq__, "not_equal": Tensor.__ne__, "less": Tensor.__lt__, "less_equal": Tensor.__le__,
    "greater": Tensor.__gt__, "greater_equal": Tensor.__ge__,
}

# a plain function: GraphBox._make calls it
Tensor._extra_init = Tensor.__dict__["_extra_init"].__func__  # type: ignore[method-assign]
_graph._TENSOR_CLS.append(Tensor)
_PARAM: list[Any] = [Tensor]  # replaced by ft.nn.Parameter once defined (fast type checks)


def _rebuild(array: np.ndarray, requires_grad: bool) -> Tensor:
    return Tensor._make(array, requires_grad=requires_grad)


class _no_record:
    def __enter__(self) -> None:
        self.prev = _mode.enabled
        _mode.enabled = False

    def __exit__(self, *exc: Any) -> None:
        _mode.enabled = self.prev


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
    from .creation import tensor

    if isinstance(x, np.ndarray):
        return Tensor._make(x) if x.dtype in _dt._BY_NP else tensor(x)
    return tensor(x)


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
    elif isinstance(a, _pycomplex) and rt.is_floating_point:
        pass
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
    if true_div:
        kind = (a.dtype if isinstance(a, Tensor) else b.dtype).np.kind
        if kind in "biu":
            d = _dt.get_default_dtype()
            a = _cast(a, d) if isinstance(a, Tensor) else _pyfloat(a)
            b = _cast(b, d) if isinstance(b, Tensor) else _pyfloat(b)
    out = fn(a, b)
    return out if isinstance(out, Tensor) else _as_tensor(out)


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


def _unary(name: str, t: Tensor) -> Tensor:
    fn = getattr(fnp, name, None)
    if fn is None:
        raise NotImplementedError(f"funcgrad.numpy has no '{name}' yet, which this Tensor method needs")
    return cast("Tensor", fn(_float(t)))


def _special(name: str) -> Callable[..., Any] | None:
    try:
        from ..scipy import special
    except ImportError:
        return None
    return getattr(special, name, None)


def _fg_device(dev: device) -> Any:
    """The funcgrad.backend Device for a Tensor-layer device (index None: device 0)."""
    return _backend.as_device("cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}")


def _to_device(t: Tensor, dev: device) -> Tensor:
    """``t`` on ``dev``: ``t`` itself when it is there already, else a copy that autograd
    records (``ToCopyBackward0``: the gradient goes back to ``t``'s device)."""
    target = _fg_device(dev)
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
    return cast("Tensor", apply_inplace(t, out, mark))


# --------------------------------------------------------------------------
# printing


def _format(t: Tensor) -> str:
    v = _fwad.primal_value(t._value)
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
            finite = v[np.isfinite(v)]
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
        if kind == "b":
            body = body.replace("True", "True").replace("False", "False")
    extras = []
    if d not in (_dt.get_default_dtype(), _dt.int64, _dt.bool) and not (d.is_complex and d is _dt.default_complex()):
        extras.append(f"dtype={d!r}")
    node = t._node
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
