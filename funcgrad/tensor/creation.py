"""Tensor creation: ``tensor``, ``zeros``, ``ones``, ``arange``, ``randn`` ... (the random generator they draw
from is ``factory_defaults.Generator``, re-exported here).

Floating Python data gets the default dtype (float32 unless changed with
``ft.set_default_dtype``), integer data int64, booleans bool; NumPy arrays
keep their dtype. Random numbers come from NumPy's PCG64 generator, seeded by
``ft.manual_seed``: reproducible, but not the same numbers as PyTorch's.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any, Callable, cast

import numpy as np

from .. import backend as _backend
from ..backend import namespace_of
from . import dtypes as _dt
from .grad_mode import state as _mode
from .boxes import GraphBox
from .size_device import SizeArg, _backend_device, device
from .tensor_class import _TENSOR_CLS, is_tensor
from .tensor_helpers import _raw, _shape_arg, register_constructors

from .factory_defaults import (  # ft.Generator, ft.manual_seed ... are these
    _DEFAULT_DEVICE as _DEFAULT_DEVICE, Generator as Generator, _rng as _rng, default_generator as default_generator,
    initial_seed as initial_seed, manual_seed as manual_seed, seed as seed,
)
from .tensor import Tensor

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace",
    "eye", "rand", "randn", "randint", "randperm", "normal", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "randint_like", "manual_seed", "seed", "initial_seed", "Generator", "scalar_tensor",
    "complex", "polar",
]


def _finish(value: Any, dtype: Any, device_: Any, requires_grad: bool) -> Tensor:
    if device_ is None:
        device_ = _DEFAULT_DEVICE[0]
    if device_ is not None:
        dev = device(device_)
        if dev.type != "cpu":  # made on the host, then copied to the device (explicitly)
            value = _backend.device_put(value, _backend_device(dev))
    if requires_grad and value.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if value.dtype not in _dt._BY_NP:
        raise TypeError(f"dtype {value.dtype} is not supported by funcgrad.tensor")
    return cast("Tensor", _TENSOR_CLS[0]._make(value, requires_grad=builtins.bool(requires_grad), inference=_mode.inference))


def _walk_kinds(x: Any, arrays: set[Any], scalars: dict[type, Any]) -> None:
    """Collect the NumPy dtypes of the tensors and arrays in ``x`` and one number of each type in it."""
    if isinstance(x, (list, tuple)):
        for e in x:
            _walk_kinds(e, arrays, scalars)
    elif is_tensor(x) or isinstance(x, np.ndarray):
        arrays.add(_raw(x).dtype)
    else:
        scalars[type(x)] = x


def _infer_np_dtype(data: Any) -> np.dtype | None:
    """The dtype PyTorch infers for Python data (None: keep NumPy's): the tensors' and arrays' promoted
    dtype, else the numbers' of the highest category (bool < int64 < default float < default complex)."""
    if isinstance(data, (np.ndarray, np.generic)):
        return None
    arrays: set[Any] = set()
    scalars: dict[type, Any] = {}
    _walk_kinds(data, arrays, scalars)
    best = None
    for t, x in scalars.items():
        try:
            d = _dt._scalar_dtype(x)
        except TypeError:
            raise TypeError(f"Could not infer dtype of {t.__name__}") from None
        best = d if best is None or _dt.category(d) > _dt.category(best) else best
    if arrays:
        return np.result_type(*arrays)
    return (best or _dt.get_default_dtype()).np  # (an empty list: the default dtype)


def _unboxed(data: Any) -> Any:
    """Nested Python data with the Tensors in it replaced by their arrays."""
    if isinstance(data, GraphBox):
        return data._value
    if isinstance(data, (list, tuple)):
        return [_unboxed(d) for d in data]
    return data


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (numbers, nested lists, arrays).

    Example::

        ft.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        ft.tensor([1, 2]).dtype          # ft.int64
    """
    if is_tensor(data):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() or "
            "sourceTensor.clone().detach().requires_grad_(True), rather than ft.tensor(sourceTensor).",
            UserWarning, stacklevel=2,
        )
        v = data._value
        value = namespace_of(v).array(v, dtype=None if dtype is None else _dt.as_dtype(dtype).np, copy=True)
        return _finish(value, dtype, device, requires_grad)
    nd = _infer_np_dtype(data) if dtype is None else _np_dtype(dtype)
    if hasattr(data, "__array_namespace__") and not isinstance(data, np.ndarray):
        value = namespace_of(data).array(data, dtype=nd, copy=True)
    else:
        value = np.array(_unboxed(data), dtype=nd, copy=True)
    return _finish(value, dtype, device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like :func:`tensor`, but shares memory with a NumPy array (or returns a tensor itself) when it can."""
    if is_tensor(data):
        return cast("Tensor", data) if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or _dt.as_dtype(dtype).np == data.dtype) and device in (None, "cpu"):
        return cast("Tensor", _TENSOR_CLS[0]._make(data, inference=_mode.inference))
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with NumPy array ``a`` (same dtype)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    if a.dtype not in _dt._BY_NP:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{a.dtype}. The only supported types are: float64, float32, "
            f"float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
        )
    return cast("Tensor", _TENSOR_CLS[0]._make(a, inference=_mode.inference))


def _np_dtype(dtype: Any, default: _dt.dtype | None = None) -> np.dtype:
    """The NumPy dtype of ``dtype``; when None, of ``default`` (the default dtype when that is None too)."""
    return (_dt.as_dtype(dtype) if dtype is not None else default or _dt.get_default_dtype()).np


def zeros(*size: SizeArg, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          out: Any = None) -> Tensor:
    """A tensor of zeros: ``ft.zeros(2, 3)`` or ``ft.zeros((2, 3))``."""
    return _finish(np.zeros(_shape_arg(size), dtype=_np_dtype(dtype)), dtype, device, requires_grad)


def ones(*size: SizeArg, dtype: Any = None, device: Any = None, requires_grad: bool = False, out: Any = None) -> Tensor:
    """A tensor of ones."""
    return _finish(np.ones(_shape_arg(size), dtype=_np_dtype(dtype)), dtype, device, requires_grad)


def empty(*size: SizeArg, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """An uninitialised tensor (here: zero-filled memory from NumPy's ``empty``)."""
    return _finish(np.empty(_shape_arg(size), dtype=_np_dtype(dtype)), dtype, device, requires_grad)


def full(size: Any, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it when not given)."""
    nd = _infer_np_dtype(fill_value) if dtype is None else _np_dtype(dtype)
    return _finish(np.full(_shape_arg((size,) if isinstance(size, builtins.int) else tuple(size)), fill_value, dtype=nd),
                   dtype, device, requires_grad)


def scalar_tensor(s: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(np.array(s, dtype=_np_dtype(dtype)), dtype, device, requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values in ``[start, end)`` with ``step``; int64 if all are integers, else the default dtype."""
    if end is None:
        start, end = 0, start
    vals = [_unboxed(v) for v in (start, end, step)]
    vals = [v.item() if hasattr(v, "item") else v for v in vals]
    ints = all(isinstance(v, builtins.int) and not isinstance(v, builtins.bool) for v in vals)
    nd = _np_dtype(dtype, _dt.int64 if ints else None)
    return _finish(np.arange(*vals, dtype=nd), dtype, device, requires_grad)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    return _finish(np.linspace(builtins.float(start), builtins.float(end), builtins.int(steps)).astype(_np_dtype(dtype)),
                   dtype, device, requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    return _finish(np.logspace(builtins.float(start), builtins.float(end), builtins.int(steps), base=base)
                   .astype(_np_dtype(dtype)), dtype, device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_np_dtype(dtype)), dtype, device, requires_grad)


def rand(*size: SizeArg, generator: Generator | None = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _finish(_rng(generator).random(_shape_arg(size)).astype(_np_dtype(dtype)), dtype, device, requires_grad)


def randn(*size: SizeArg, generator: Generator | None = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples.

    Example::

        ft.manual_seed(0); x = ft.randn(3, 4, requires_grad=True)
    """
    nd = _np_dtype(dtype)
    rng = _rng(generator)
    shape = _shape_arg(size)
    if nd.kind == "c":
        v = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / np.sqrt(2.0)
    else:
        v = rng.standard_normal(shape)
    return _finish(v.astype(nd), dtype, device, requires_grad)


def randint(low: int, high: int | None = None, size: Any = None, *, generator: Generator | None = None,
            dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Random integers in ``[low, high)`` (int64 by default)."""
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    nd = _np_dtype(dtype, _dt.int64)
    return _finish(_rng(generator).integers(low, high, size=tuple(size)).astype(nd), dtype, device, requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    nd = _np_dtype(dtype, _dt.int64)
    return _finish(_rng(generator).permutation(n).astype(nd), dtype, device, requires_grad)


def normal(mean: Any, std: Any, size: Any = None, *, generator: Generator | None = None) -> Tensor:
    m, s = _raw(mean), _raw(std)
    shape = tuple(size) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    v = _rng(generator).normal(m, s, size=shape)
    return _finish(v.astype(_dt.get_default_dtype().np), None, None, False)


def _like(x: Tensor, dtype: Any) -> tuple[Any, ...]:
    d = x.dtype if dtype is None else _dt.as_dtype(dtype)
    return tuple(x.shape), d


def _like_of(factory: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``<factory>_like(input, *, dtype=None, device=None, requires_grad=False)``: ``input``'s shape and dtype."""

    def like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,  # noqa: A002
             **_: Any) -> Tensor:
        shape, d = _like(input, dtype)
        return factory(shape, dtype=d, device=device, requires_grad=requires_grad)

    like.__name__ = like.__qualname__ = factory.__name__ + "_like"
    return like


zeros_like, ones_like, empty_like = _like_of(zeros), _like_of(ones), _like_of(empty)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False, **_: Any) -> Tensor:
    shape, d = _like(input, dtype)
    return full(shape, fill_value, dtype=d, device=device, requires_grad=requires_grad)


def rand_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:  # noqa: A002
    shape, d = _like(input, dtype)
    return rand(shape, dtype=d, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:  # noqa: A002
    shape, d = _like(input, dtype)
    return randn(shape, dtype=d, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, dtype: Any = None, **_: Any) -> Tensor:  # noqa: A002
    shape, d = _like(input, dtype)
    return randint(low, high, shape, dtype=d)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    """``real + 1j * imag`` (differentiable in both)."""
    return real + imag * 1j


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002
    return abs * angle.cos() + (abs * angle.sin()) * 1j


register_constructors(tensor=tensor, empty=empty, full=full, zeros=zeros, ones=ones)
