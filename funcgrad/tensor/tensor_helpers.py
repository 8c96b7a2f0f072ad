"""The helpers the Tensor's methods share (``tensor.py`` and its method mixins ``_tensor_*.py``):
operands as Tensors, PyTorch's type promotion, dims, indices, binary and unary methods,
in-place results. Below ``tensor.py``: the Tensor class comes from ``tensor_class``.
"""

# A result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor class
# ``TensorT`` of the argument (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import warnings
from typing import Any, Callable, cast, overload

import numpy as np

import funcgrad.numpy as fnp

from .. import backend as _backend
from ..backend import namespace_of
from ..core import Box
from . import dtypes as _dt
from . import _func_support as _func
from . import boxes as _boxes
from . import nodes as _nodes
from .boxes import GraphBox
from .inplace_writes import apply_inplace
from .prim_node import PrimNode
from .size_device import Size, device, _backend_device
from .tensor_class import _PARAM, _TENSOR_CLS
from .torch_names import named, rename_node
from .tensor_type import TensorBase, TensorT


_pyint, _pyfloat, _pybool, _pycomplex = builtins.int, builtins.float, builtins.bool, builtins.complex

# ``ft.tensor``, ``ft.empty``, ``ft.full``, ``ft.zeros``, ``ft.ones``, registered by creation.py (which is above
# tensor.py): what ``Tensor(...)``, ``_as_tensor`` of Python data and ``x.new_*(...)`` call
_CONSTRUCTORS: dict[str, Callable[..., Any]] = {}


def register_constructors(**constructors: Callable[..., Any]) -> None:
    """Register creation.py's factories, which ``Tensor(...)`` and ``x.new_*(...)`` call."""
    _CONSTRUCTORS.update(constructors)


def node_mark() -> int:
    """A mark in the order nodes are made: the nodes made after this call have a larger ``_seq``
    (in-place ops protect what the nodes made since then saved; see ``apply_inplace``)."""
    return next(_nodes._seq)


def named_result(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """For a composite op (several primitives, the last one depending on the arguments, as
    ``mse_loss``'s on its reduction): ``fn`` whose result's node, made during the call, takes
    PyTorch's ``name`` when it returns. An op whose node is one primitive call's names it as it is
    made, with ``torch_names.named``.

    Example::

        named_result("NllLossBackward0", loss_of)(input, target)
    """
    def call(*args: Any, **kwargs: Any) -> Any:
        mark = next(_nodes._seq)
        out = fn(*args, **kwargs)
        node = getattr(out, "_node", None)
        if node is not None and node._seq > mark and isinstance(node, PrimNode):
            rename_node(node, name)
        return out

    return call


def _dims(dim: Any, nd: int) -> tuple[Any, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(_wrap_dim(d, nd) for d in dim) or None  # () reduces over every dim, as None
    return (_wrap_dim(dim, nd),)


def _wrap_dim(d: Any, nd: int) -> int:
    """Dimension ``d`` of a tensor of ``nd`` dimensions (a 0-d tensor has one), counted from 0."""
    if type(d) is _pyint and 0 <= d < nd:  # (the commonest case first)
        return d
    d = _pyint(d)
    n = nd if nd > 0 else 1
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _to_raw_index(idx: Any) -> Any:
    """Tensors inside an index become raw arrays; indices carry no derivative. A list holding a
    slice, ``...``, None, a sequence or a tensor is read as a tuple, with PyTorch's warning
    (``x[[slice(None), [1, 3]]]`` is ``x[:, [1, 3]]``, NumPy's old rule that PyTorch keeps)."""
    if type(idx) is list and _sequence_as_tuple(idx):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
            "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor "
            "index, x[torch.tensor(seq)], which will result either in an error or a different result",
            UserWarning, stacklevel=3)
        idx = tuple(idx)
    return _raw_index(idx)


def _sequence_as_tuple(idx: list[Any]) -> bool:
    return len(idx) < 32 and any(i is None or i is Ellipsis or isinstance(i, (slice, list, tuple, GraphBox, np.ndarray))
                                 for i in idx)


def _raw_index(idx: Any) -> Any:
    if isinstance(idx, tuple):
        return tuple(_raw_index(i) for i in idx)
    if isinstance(idx, GraphBox):
        return idx._value
    if isinstance(idx, list) and any(isinstance(i, GraphBox) for i in idx):
        return [_raw_index(i) for i in idx]
    return idx


def _is_basic(idx: tuple[Any, ...]) -> bool:
    for i in idx:
        if i is None or i is Ellipsis or isinstance(i, slice):
            continue
        if isinstance(i, (_pyint, np.integer)) and not isinstance(i, (_pybool, np.bool_)):
            continue
        return False
    return True


# --------------------------------------------------------------------------
# helpers


def _raw(x: Any) -> Any:
    return x._value if isinstance(x, GraphBox) else x


def _shares(a: Any, b: Any) -> bool:
    ob = getattr(a, "base", None)
    return ob is not None and (ob is b or ob is getattr(b, "base", None))


def _shape_arg(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """A shape given as sizes or as one sequence, as a tuple of Python ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    for s in shape:
        if type(s) is not _pyint:
            return tuple(_pyint(s) for s in shape)
    return shape


@overload
def _as_tensor(x: TensorT) -> TensorT: ...
@overload
def _as_tensor(x: Any) -> Any: ...


def _as_tensor(x: Any) -> Any:
    """A Tensor from a Tensor, a NumPy array, a box or Python data (untracked)."""
    if isinstance(x, _TENSOR_CLS[0]):
        return x
    if isinstance(x, GraphBox):
        return _boxes.as_tensor_box(x)
    if isinstance(x, Box):
        raise TypeError(
            "a value traced by a funcgrad transform cannot be used as a Tensor; use funcgrad.numpy on it instead"
        )
    tensor = _CONSTRUCTORS["tensor"]
    if isinstance(x, np.ndarray):
        return _TENSOR_CLS[0]._make(x) if x.dtype in _dt._BY_NP else tensor(x)
    return tensor(x)


def _cond(c: Any) -> Any:
    """A ``where`` condition computed from a tensor's value: under ``ft.func`` that value is a transform's
    traced value, kept inside a Tensor so the condition and the tensors reach the transform together."""
    return _TENSOR_CLS[0]._make(c) if isinstance(c, Box) else c


def _as_operand(x: Any) -> Any:
    """Tensors stay, Python numbers stay (weak, as in PyTorch), arrays become Tensors."""
    if isinstance(x, _TENSOR_CLS[0]):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (_pybool, _pyint, _pyfloat, _pycomplex)):
        return x
    return _as_tensor(x)


def _cast(t: TensorT, d: _dt.dtype) -> TensorT:
    if t._value.dtype == d.np:
        return t
    return _as_tensor(fnp.astype(t, d.np))


def _promote(a: Any, b: Any) -> tuple[Any, ...]:
    # fast paths: same dtype, or a floating tensor with a real Python number
    ta, tb = type(a), type(b)
    tensor_cls, param_cls = _TENSOR_CLS[0], _PARAM[0]
    if ta is tensor_cls or ta is param_cls:
        if tb is tensor_cls or tb is param_cls:
            if a._value.dtype == b._value.dtype:
                return a, b
        elif (tb is _pyfloat or tb is _pyint) and a._value.dtype.kind in "fc":
            return a, b
    elif (ta is _pyfloat or ta is _pyint) and (tb is tensor_cls or tb is param_cls) and b._value.dtype.kind in "fc":
        return a, b
    a, b = _as_operand(a), _as_operand(b)
    rt = _dt.result_type(a, b)
    if isinstance(a, tensor_cls):
        a = _cast(a, rt)
    if isinstance(b, tensor_cls):
        b = _cast(b, rt)
    return a, b


def _scalar_like(v: Any, t: TensorT) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _zero_like_scalar(t: TensorT) -> Any:
    return namespace_of(t._value).zeros((), dtype=t._value.dtype)


def _binary(fn: Callable[..., Any], a: Any, b: Any, true_div: bool = False) -> Any:
    a, b = _promote(a, b)
    tensor_cls = _TENSOR_CLS[0]
    if true_div and (a if isinstance(a, tensor_cls) else b)._value.dtype.kind in "biu":
        d = _dt.get_default_dtype()
        a = _cast(a, d) if isinstance(a, tensor_cls) else _pyfloat(a)
        b = _cast(b, d) if isinstance(b, tensor_cls) else _pyfloat(b)
    out = fn(a, b)
    return out if isinstance(out, tensor_cls) else _as_tensor(out)


def _binop(fn: Callable[..., Any], reflected: bool = False,
           true_div: bool = False) -> Callable[[TensorBase[TensorT], Any], TensorT]:
    """The operator method ``self (op) other`` (``other (op) self`` when ``reflected``), through ``_binary``."""
    if reflected:
        def op(self: TensorBase[TensorT], other: Any) -> TensorT:
            return _binary(fn, other, self, true_div)
    else:
        def op(self: TensorBase[TensorT], other: Any) -> TensorT:
            return _binary(fn, self, other, true_div)
    return op


def _compare(fn: Callable[..., Any], a: TensorT, b: Any) -> TensorT:
    if b is None or isinstance(b, str):
        return NotImplemented
    a, b = _promote(a, b)
    return _wrap_nondiff(fn(_raw(a), _raw(b)))


def _logical(fn: Callable[..., Any], a: TensorT, b: Any) -> TensorT:
    return _wrap_nondiff(fn(_raw(a), _raw(_as_operand(b))))


def _wrap_nondiff(v: Any) -> Any:
    """A Tensor (without history) of ``v``: a Tensor, a box or an array."""
    if isinstance(v, _TENSOR_CLS[0]):
        return v
    if isinstance(v, GraphBox):
        return _boxes.as_tensor_box(v)
    return _TENSOR_CLS[0]._make(_boxes._as_array(v))


def _float(t: TensorT) -> TensorT:
    if t._value.dtype.kind in "biu":
        return _cast(t, _dt.get_default_dtype())
    return t


def _unary(fn: Callable[..., Any], to_float: bool = True) -> Callable[[TensorBase[TensorT]], TensorT]:
    """The method ``t.<name>()``: ``fn(t)`` (a one-argument primitive), in floats for an integer ``t``
    when ``to_float``. ``ft.<name>`` calls the primitive the same way (``_prim``, see ops.py)."""
    prim = fn.primitive  # type: ignore[attr-defined]

    def method(self: TensorBase[TensorT]) -> TensorT:
        if to_float and self._value.dtype.kind in "biu":
            self = _cast(self, _dt.get_default_dtype())
        return fn(self)

    method.__name__ = method.__qualname__ = prim.name
    method._prim = prim  # type: ignore[attr-defined]
    return method


def _to_device(t: TensorT, dev: device) -> TensorT:
    """``t`` on ``dev``: ``t`` itself when it is there already, else a copy that autograd
    records (``ToCopyBackward0``: the gradient goes back to ``t``'s device)."""
    target = _backend_device(dev)
    if _backend.device_of(t._value) == target:
        return t
    from ..numpy import creation

    return _as_tensor(named("ToCopyBackward0", creation.device_copy, creation._device_copy)(t, target))


def _finish_inplace(t: TensorT, out: TensorT, mark: int, check_dtype: bool = True) -> TensorT:
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
    return apply_inplace(t, out, mark)


def evenly_shared(x: Any, value: Any, name: str) -> Any:
    """``value`` (a 0-d selection of ``x``: its median) whose gradient the elements of ``x`` equal to
    it share evenly (the NaNs where it is NaN), as PyTorch's full reductions that select (``median()``,
    ``nanmedian()``); the node is named ``name``."""
    if not (x.is_floating_point() or x.is_complex()):
        return value
    v = value.detach()
    ties = (x == v) | (x.isnan() & v.isnan())
    return named(name, fnp.divide)(x.masked_fill(~ties, 0).sum(), ties.sum().to(x.dtype))
