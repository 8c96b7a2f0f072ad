"""Tensor dtypes and PyTorch's type-promotion rules.

``ft.float32`` and friends are :class:`dtype` objects that wrap a NumPy dtype
(``np.dtype(ft.float32)`` works, so they can be passed to NumPy too). Floating
Python data defaults to ``get_default_dtype()`` (float32 unless changed),
integer data to int64, as in PyTorch. Promotion follows PyTorch: a tensor
with dimensions outranks a zero-dimensional tensor, which outranks a Python
number, unless the lower-ranked operand is of a higher *category*
(bool < integer < floating < complex). So ``int64 tensor * 2.5`` is float32
and ``float32 tensor * float64 0-d tensor`` stays float32 (NumPy would give
float64 in both cases).
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any, cast

import numpy as np

__all__ = [
    "dtype", "float16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
    "int64", "uint8", "bool", "half", "float", "double", "cfloat", "cdouble", "short", "int", "long",
    "set_default_dtype", "get_default_dtype", "promote_types", "result_type", "can_cast", "finfo", "iinfo",
]

_builtin_bool = bool


class dtype:
    """A tensor element type, like ``torch.dtype``; wraps a NumPy dtype.

    Example::

        ft.zeros(2, dtype=ft.float64).dtype is ft.float64
        ft.float32.is_floating_point      # True
    """

    __slots__ = ("np", "name", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, np_dtype: Any, name: str):
        self.np: np.dtype[Any] = np.dtype(np_dtype)
        self.name: str = name
        self.is_floating_point: _builtin_bool = self.np.kind == "f"
        self.is_complex: _builtin_bool = self.np.kind == "c"
        self.is_signed: _builtin_bool = self.np.kind in "fci"
        self.itemsize: _builtins.int = self.np.itemsize

    @property
    def dtype(self) -> np.dtype[Any]:  # lets NumPy accept ft dtypes: np.zeros(2, dtype=ft.float32)
        return self.np

    def to_real(self) -> "DType":
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> "DType":
        return {float32: complex64, float64: complex128, float16: complex64}.get(self, self)

    def __repr__(self) -> str:
        return f"ft.{self.name}"

    def __reduce__(self) -> Any:
        return (_by_name, (self.name,))

    def __eq__(self, other: Any) -> _builtin_bool:
        if isinstance(other, dtype):
            return self is other
        try:
            return _builtin_bool(self.np == np.dtype(other))
        except TypeError:
            return False

    def __hash__(self) -> _builtins.int:
        return hash(self.np)


float16 = half = dtype(np.float16, "float16")
DType = dtype  # the class under a name that no method shadows, for annotations inside it

float32 = dtype(np.float32, "float32")
float64 = double = dtype(np.float64, "float64")
complex64 = cfloat = dtype(np.complex64, "complex64")
complex128 = cdouble = dtype(np.complex128, "complex128")
int8 = dtype(np.int8, "int8")
int16 = short = dtype(np.int16, "int16")
int32 = dtype(np.int32, "int32")
int64 = long = dtype(np.int64, "int64")
uint8 = dtype(np.uint8, "uint8")
bool = dtype(np.bool_, "bool")  # noqa: A001 - mirrors torch.bool
float = float32  # noqa: A001 - torch.float is float32
int = int32  # noqa: A001 - torch.int is int32

_ALL = [float16, float32, float64, complex64, complex128, int8, int16, int32, int64, uint8, bool]
_BY_NP = {d.np: d for d in _ALL}


def _by_name(name: str) -> dtype:
    got: dtype = globals()[name]
    return got


def as_dtype(d: Any) -> dtype:
    """An ft dtype from an ft dtype, a NumPy dtype, a Python type or a name."""
    if isinstance(d, dtype):
        return d
    for py_type, got in ((_builtin_bool, bool), (_builtins.float, float64), (_builtins.int, int64),
                         (_builtins.complex, complex128)):
        if d is py_type:
            return got
    try:
        nd = np.dtype(d)
    except TypeError:
        raise TypeError(f"dtype must be an ft dtype (e.g. ft.float32), got {d!r}") from None
    return from_numpy_dtype(nd)


def from_numpy_dtype(nd: Any) -> dtype:
    got = _BY_NP.get(np.dtype(nd))
    if got is None:
        raise TypeError(
            f"NumPy dtype {np.dtype(nd)} is not supported by funcgrad.tensor; supported: "
            + ", ".join(x.name for x in _ALL)
        )
    return got


class _Defaults:
    float_dtype: dtype = float32


_defaults = _Defaults()


def set_default_dtype(d: Any) -> None:
    """Set the dtype of floating data created from Python numbers (float32 at start).

    Only float32 and float64 are allowed (PyTorch also allows float16/bfloat16).

    Example::

        ft.set_default_dtype(ft.float64)
        ft.tensor([1.0]).dtype            # ft.float64
    """
    d = as_dtype(d)
    if d not in (float32, float64, float16):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _defaults.float_dtype = d


def get_default_dtype() -> dtype:
    """The default floating dtype (float32 unless set with ``set_default_dtype``)."""
    return _defaults.float_dtype


def default_complex() -> dtype:
    return complex128 if _defaults.float_dtype is float64 else complex64


def category(d: dtype) -> _builtins.int:
    k = d.np.kind
    return 0 if k == "b" else 1 if k in "iu" else 2 if k == "f" else 3


def promote_types(a: Any, b: Any) -> dtype:
    """PyTorch's ``promote_types``: the smallest dtype both can be cast to.

    Unlike NumPy, an integer and a floating type give the floating type
    (``promote_types(int64, float32)`` is float32).
    """
    x, y = as_dtype(a), as_dtype(b)
    if x is y:
        return x
    ca, cb = category(x), category(y)
    if ca == 3 or cb == 3:
        # complex: the larger of the component precisions
        size = max((x.itemsize // 2 if ca == 3 else x.itemsize if ca == 2 else 4),
                   (y.itemsize // 2 if cb == 3 else y.itemsize if cb == 2 else 4))
        return complex128 if size >= 8 else complex64
    if ca == 2 or cb == 2:
        if ca == 2 and cb == 2:
            return x if x.itemsize >= y.itemsize else y
        return x if ca == 2 else y
    return from_numpy_dtype(np.promote_types(x.np, y.np))


def _scalar_dtype(x: Any) -> dtype:
    if isinstance(x, (_builtin_bool, np.bool_)):
        return bool
    if isinstance(x, (_builtins.int, np.integer)):
        return int64
    if isinstance(x, (_builtins.float, np.floating)):
        return _defaults.float_dtype
    if isinstance(x, (_builtins.complex, np.complexfloating)):
        return default_complex()
    raise TypeError(f"expected a tensor or a number, got {type(x).__name__}")


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # PyTorch's combine_categories
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(*operands: Any) -> dtype:
    """The dtype PyTorch gives an operation on these tensors and numbers.

    Example::

        ft.result_type(ft.tensor([1, 2]), 2.5)    # ft.float32
    """
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        is_tensor = isinstance(d, dtype) and hasattr(x, "dim")
        if is_tensor or isinstance(x, np.ndarray):
            d = d if is_tensor else from_numpy_dtype(x.dtype)
            if (x.dim() if is_tensor else x.ndim) > 0:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = _scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    out = _combine(dim, _combine(zero, wrapped))
    if out is None:
        raise TypeError("result_type needs at least one operand")
    return out


def can_cast(from_: Any, to: Any) -> _builtin_bool:
    """PyTorch's casting rule for in-place results: no lowering of category."""
    return category(as_dtype(from_)) <= category(as_dtype(to))


def finfo(d: Any = None) -> np.finfo[Any]:
    """Machine limits of a floating dtype (NumPy's ``finfo``)."""
    return cast("np.finfo[Any]", np.finfo((as_dtype(d) if d is not None else _defaults.float_dtype).np))


def iinfo(d: Any) -> np.iinfo:
    """Machine limits of an integer dtype (NumPy's ``iinfo``)."""
    return np.iinfo(as_dtype(d).np)


# Names PyTorch prints in messages: Float, Long ... and the legacy types torch.FloatTensor, torch.LongTensor ...
SCALAR_NAMES = {
    float16: "Half", float32: "Float", float64: "Double", complex64: "ComplexFloat",
    complex128: "ComplexDouble", int8: "Char", int16: "Short", int32: "Int", int64: "Long",
    uint8: "Byte", bool: "Bool",
}
TYPE_NAMES = {d: name + "Tensor" for d, name in SCALAR_NAMES.items()}
