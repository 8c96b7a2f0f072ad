"""The ``Tensor`` class: a backend array plus PyTorch's autograd attributes and methods.

Every method maps onto funcgrad.numpy functions (one place per operation);
recording happens in the core's ``ReverseTrace.process`` (the steps
``tensor_trace.TensorTrace`` overrides) because a Tensor is a box of the tensor trace.
Type promotion follows PyTorch (``dtypes.result_type``, in ``tensor_helpers``) and is
applied before the NumPy-semantics primitive is called.

The class is split by concern: this module keeps the core (construction and
the autograd attributes: requires_grad, grad, grad_fn, backward, hooks,
retain_grad, detach, is_leaf); the methods live in mixins below it: ``_tensor_math``
(arithmetic, elementwise, reductions, linear algebra), ``_tensor_shape`` (shape,
views, indexing), ``_tensor_inplace`` (``*_`` methods, ``__setitem__``) and
``_tensor_convert`` (dtype/device, ``numpy()``/``item()``, printing, copying,
``new_*``), which share the helpers of ``tensor_helpers`` and ``size_device``.
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
from . import dtypes as _dt
from .boxes import GraphBox
from .nodes import _add_hook, RemovableHandle
from . import _func_support as _func
from ._tensor_breadth_b import _BreadthMixinB
from ._tensor_convert import _ConvertMixin
from ._tensor_inplace import _InplaceMixin
from ._tensor_math import _MathMixin
from ._tensor_shape import _ShapeMixin
from ._tensor_special import _SpecialMixin
from ._tensor_reductions_more import _ReductionsMoreMixin
from ._tensor_spectral import _SpectralMixin
from .size_device import Size, device
from .tensor_class import is_tensor, register_tensor_class
from . import tensor_helpers as _helpers
from .tensor_helpers import _CONSTRUCTORS, _compare

__all__ = ["Tensor", "Size", "device", "is_tensor"]

_pyint, _pybool = builtins.int, builtins.bool

# ``ft.autograd.backward``, registered by backward.py (which imports this module): what ``Tensor.backward`` runs
_BACKWARD: list[Callable[..., Any]] = []


def register_backward(fn: Callable[..., Any]) -> None:
    """Register ``fn(tensors, grad_tensors, retain_graph, create_graph, inputs=)`` as what ``Tensor.backward`` runs."""
    _BACKWARD[:] = [fn]


_grad_lock = threading.RLock()


_TORCH_SCALAR = {"float64": "double", "float32": "float", "float16": "half", "int64": "long", "int32": "int"}


def _rebuild(array: np.ndarray, requires_grad: bool) -> Tensor:
    return Tensor._make(array, requires_grad=requires_grad)




class Tensor(_MathMixin["Tensor"], _ShapeMixin["Tensor"], _InplaceMixin["Tensor"], _ConvertMixin["Tensor"],
             _SpecialMixin["Tensor"], _ReductionsMoreMixin["Tensor"], _SpectralMixin["Tensor"],
             _BreadthMixinB["Tensor"], GraphBox):
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
                         t._version_counter, t._inference)

    def is_inference(self) -> bool:
        return self._inference

    @property
    def is_leaf(self) -> bool:
        self._graph()
        return self._node is None

    @property
    def requires_grad(self) -> bool:
        if self._base is not None:
            if self._view_kind is None:
                self._graph()  # a view whose base changed in place takes its history from the base now
            elif self._view_kind in ("no_grad", "inference") and not self._requires_grad:
                return bool(self._base.requires_grad)  # as PyTorch reports such a view (it records nothing)
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
        if self._node is not None and not self._retains_grad and self._grad is None:  # (PyTorch: only when unset)
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
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
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
        if self._requires_grad and value._value.dtype.kind not in "fc":
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
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

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (_rebuild, (_backend.to_numpy(self._value), self._requires_grad and self._node is None))

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

# ``tensor_helpers._as_tensor`` (the same function) with its result typed as this class, for the modules
# above tensor.py: below it, a result made from Python data is only known as ``Any``.
_as_tensor: Callable[[Any], Tensor] = _helpers._as_tensor

register_tensor_class(Tensor)
