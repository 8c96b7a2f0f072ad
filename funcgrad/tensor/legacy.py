"""Legacy and less common PyTorch entry points met in older code: the typed tensor
classes (``ft.FloatTensor``, ``ft.LongTensor``, ...), ``var_mean``/``std_mean`` and
``view_as_complex``.
"""

from __future__ import annotations

from typing import Any, cast

from . import dtypes as _dt
from .complex_views import view_as_complex_array, view_as_complex_problem
from .creation import empty, tensor
from .tensor import Size, Tensor
from .tensor import _as_tensor
from .nodes import join_outputs

__all__ = [
    "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
    "ByteTensor", "BoolTensor", "var_mean", "std_mean", "view_as_complex",
]


class _LegacyTensorType(type):
    """``ft.FloatTensor(2, 3)`` / ``ft.FloatTensor([1, 2])`` build a tensor of that dtype, and
    ``isinstance(t, ft.FloatTensor)`` checks the dtype, as PyTorch's legacy types do."""

    _dtype: Any

    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor) and other.dtype == cls._dtype

    def __call__(cls, *args: Any) -> Tensor:
        if not args:
            return empty(0, dtype=cls._dtype)
        if len(args) == 1 and isinstance(args[0], Size):
            return empty(*args[0], dtype=cls._dtype)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return empty(*args, dtype=cls._dtype)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, Tensor):
                return data.to(cls._dtype)
            if cls._dtype.is_floating_point:  # made in that precision (through float32, DoubleTensor([0.1]) lost digits)
                return tensor(data, dtype=cls._dtype)
            return tensor(data).to(cls._dtype)  # floats to an integer type truncate, as in PyTorch
        raise TypeError(f"{cls.__name__}(): expected sizes (ints) or one data argument, got {args!r}")


def _legacy(name: str, dtype: Any) -> Any:
    return _LegacyTensorType(name, (), {"_dtype": dtype, "__doc__": f"Legacy constructor of {dtype} tensors.",
                                        "__module__": __name__})


# FloatTensor is float32's, ..., named by dtypes.TYPE_NAMES
FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor, BoolTensor = (
    _legacy(_dt.TYPE_NAMES[d], d) for d in (_dt.float32, _dt.float64, _dt.float16, _dt.int64, _dt.int32, _dt.int16,
                                            _dt.int8, _dt.uint8, _dt.bool))


def var_mean(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,  # noqa: A002
             correction: Any = None) -> tuple[Any, ...]:
    """``(var, mean)`` over ``dim`` (PyTorch's ``torch.var_mean``).

    Example::

        v, m = ft.var_mean(ft.tensor([1., 2., 4.]))   # (2.3333, 2.3333)
    """
    x = _as_tensor(input)
    return join_outputs((x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)),
                        "VarMeanBackward0")


def std_mean(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,  # noqa: A002
             correction: Any = None) -> tuple[Any, ...]:
    """``(std, mean)`` over ``dim`` (PyTorch's ``torch.std_mean``)."""
    x = _as_tensor(input)
    return join_outputs((x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)),
                        "StdMeanBackward0")


def view_as_complex(input: Any) -> Tensor:  # noqa: A002
    """Pairs ``(..., 2)`` of reals as complex numbers: a view of the same memory, as
    ``torch.view_as_complex`` (the pairs must be adjacent: PyTorch's layout errors otherwise).
    A float16 tensor gives a complex64 copy (NumPy has no complex type of half precision).

    Example::

        ft.view_as_complex(ft.tensor([[1., 2.], [3., 4.]]))   # tensor([1.+2.j, 3.+4.j])
    """
    x = _as_tensor(input)
    if x.dtype not in (_dt.float16, _dt.float32, _dt.float64):
        raise NotImplementedError(f"view_as_complex is only supported for half, float and double tensors, but got "
                                  f"a tensor of scalar type: {_dt.SCALAR_NAMES[x.dtype]}")
    problem = view_as_complex_problem(tuple(x.shape), tuple(x.stride()), x.storage_offset())
    if problem is not None:
        raise RuntimeError(problem)
    return cast(Tensor, view_as_complex_array(x))

