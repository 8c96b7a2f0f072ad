"""The ``ft.<op>`` functions (``ft.exp(x)``, ``ft.cat``, ``ft.where`` ...).

Most are the Tensor method of the same name, called on the first argument;
the rest (cat, stack, where, ...) are written here once.
"""

from __future__ import annotations

import builtins
import functools
from typing import Any, Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..numpy import linalg as _linalg
from ..numpy import shape_ops as _shape_ops

from . import dtypes as _dt
from .complex_views import view_as_real_array
from .dtypes import can_cast, promote_types
from .tensor import Tensor, is_tensor
from .conditional import where
from .tensor import _as_tensor
from .tensor_helpers import _cast, _cond, _promote, _raw, _wrap_dim
from .torch_names import named

# Literal lists, so that type checkers see what ``from .ops import *`` exports: first the ft.<name> that
# are ``input.<name>(...)`` (made from this list below), then those written here (added after them).
__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
    "fmod", "pow", "float_power", "neg", "negative", "abs", "absolute", "reciprocal", "square", "sqrt", "rsqrt",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin",
    "acos", "atan", "arcsin", "arccos", "arctan", "atan2", "arctan2", "sigmoid", "relu", "softmax", "log_softmax",
    "logsumexp", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "clamp", "clip", "clamp_min",
    "clamp_max", "maximum", "minimum", "lerp", "masked_fill", "conj", "conj_physical", "resolve_conj", "angle",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal", "equal",
    "allclose", "isclose", "isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or",
    "logical_xor", "sum", "nansum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "argsort",
    "sort", "topk", "var", "std", "norm", "cumsum", "cumprod", "all", "any", "count_nonzero", "matmul", "mm",
    "bmm", "mv", "dot", "outer", "ger", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose",
    "swapaxes", "swapdims", "t", "permute", "movedim", "moveaxis", "repeat_interleave", "flip", "roll", "narrow",
    "select", "unbind", "split", "chunk", "diagonal", "trace", "tril", "triu", "gather", "index_select",
    "masked_select", "take", "nonzero", "clone", "numel", "is_complex", "is_floating_point", "broadcast_to",
    "tile", "adjoint", "diag", "detach", "scatter_add",
]


def _method_fn(name: str) -> Callable[..., Any]:
    method = getattr(Tensor, name)
    prim: Any = getattr(method, "_prim", None)  # a unary method (tensor._unary): its primitive
    call: Any = prim.call if prim is not None else None

    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if kwargs and (out := kwargs.pop("out", None)) is not None:
            return _write_out(name, out, input, args, kwargs)
        if input.__class__ is Tensor:
            return method(input, *args, **kwargs)
        return getattr(_as_tensor(input), name)(*args, **kwargs)

    def unary(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if input.__class__ is Tensor and not args and not kwargs and input._value.dtype.kind in "fc":
            return call(input)
        return fn(input, *args, **kwargs)

    f = fn if prim is None else unary
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``ft.{name}(input, ...)`` is ``input.{name}(...)`` (PyTorch's ``torch.{name}``)."
    return f


# the ft.<name> that are ``input.<name>(...)``; spelled out so that type checkers and readers see every name
(
    add, sub, subtract, mul, multiply, div, divide, true_divide, floor_divide, remainder, fmod, pow,
    float_power, neg, negative, abs, absolute, reciprocal, square, sqrt, rsqrt, exp, exp2, expm1, log, log2,
    log10, log1p, sin, cos, tan, tanh, sinh, cosh, asin, acos, atan, arcsin, arccos, arctan, atan2, arctan2,
    sigmoid, relu, softmax, log_softmax, logsumexp, sign, sgn, floor, ceil, round, trunc, frac, clamp, clip,
    clamp_min, clamp_max, maximum, minimum, lerp, masked_fill, conj, conj_physical, resolve_conj, angle, eq,
    ne, lt, le, gt, ge, greater, less, greater_equal, less_equal, not_equal, equal, allclose, isclose, isnan,
    isinf, isfinite, logical_not, logical_and, logical_or, logical_xor, sum, nansum, mean, prod, max, min,
    amax, amin, argmax, argmin, argsort, sort, topk, var, std, norm, cumsum, cumprod, all, any, count_nonzero,
    matmul, mm, bmm, mv, dot, outer, ger, reshape, flatten, unflatten, squeeze, unsqueeze, transpose, swapaxes,
    swapdims, t, permute, movedim, moveaxis, repeat_interleave, flip, roll, narrow, select, unbind, split,
    chunk, diagonal, trace, tril, triu, gather, index_select, masked_select, take, nonzero, clone, numel,
    is_complex, is_floating_point, broadcast_to, tile, adjoint, diag, detach, scatter_add,
) = map(_method_fn, __all__)  # noqa: A001 (pow, abs, round, sum, max, min, all, any)
__all__ += [
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "where", "einsum", "real", "imag", "is_tensor",
    "broadcast_tensors", "meshgrid", "cdist", "tensordot", "view_as_real", "atleast_1d", "result_type", "can_cast",
    "promote_types", "is_nonzero", "cross",
]


def _write_out(name: str, out: Any, input: Any, args: tuple[Any, ...], kwargs: dict[Any, Any]) -> Any:  # noqa: A002
    """``ft.<op>(..., out=t)``: compute, then write into ``t`` (resized if its shape differs), as
    PyTorch does; like PyTorch, refused while grad mode is on and an argument requires grad."""
    import warnings

    from ._func_support import is_traced
    from .grad_mode import is_grad_enabled, no_grad

    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    tensors = [input, out, *args, *kwargs.values()]
    if is_grad_enabled() and builtins.any(isinstance(t, Tensor) and t.requires_grad for t in tensors):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           f"but one of the arguments requires grad.")
    if builtins.any(isinstance(t, Tensor) and is_traced(t._value) for t in tensors):  # under ft.func
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           f"but one of the arguments is traced by an ft.func transform; use the result instead "
                           f"(y = ft.{name}(...)) or an in-place method")
    with no_grad():
        res = getattr(_as_tensor(input), name)(*args, **kwargs)
        if isinstance(res, tuple):
            raise NotImplementedError(f"{name}(): out= is supported for single-result functions only")
        if not _dt.can_cast(res.dtype, out.dtype):
            raise RuntimeError(f"result type {_dt.SCALAR_NAMES[res.dtype]} can't be cast to the desired output type "
                               f"{_dt.SCALAR_NAMES[out.dtype]}")
        if tuple(out.shape) != tuple(res.shape):
            if out.numel() != 0:
                warnings.warn(
                    f"An output with one or more elements was resized since it had shape {list(out.shape)}, which "
                    f"does not match the required output shape {list(res.shape)}. This behavior is deprecated, and in "
                    f"a future PyTorch release outputs will not be resized unless they have zero elements. You can "
                    f"explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
                    UserWarning, stacklevel=3)
            out.resize_(tuple(res.shape))
        out.copy_(res)
    return out


def is_nonzero(x: Tensor) -> bool:
    return bool(x)


def real(x: Tensor) -> Tensor:
    return _as_tensor(x).real


def imag(x: Tensor) -> Tensor:
    return _as_tensor(x).imag


def _common(tensors: Sequence[Any]) -> list[Any]:
    ts = [_as_tensor(t) for t in tensors]
    if not ts:
        raise RuntimeError("expected a non-empty list of Tensors")
    d = functools.reduce(_dt.promote_types, [t.dtype for t in ts])
    return [_cast(t, d) for t in ts]


def _fit_legacy_empty(ts: list[Any], dim: int) -> list[Any]:
    """PyTorch's legacy rule: an empty 1-D tensor is skipped in ``cat``'s shape checks. It is reshaped
    to the others' shape with size 0 along ``dim``, so it still gets a (zero-size) gradient."""
    full = [t for t in ts if not (t.dim() == 1 and t.numel() == 0)]
    if not full or len(full) == len(ts):
        return ts
    shape = list(full[0].shape)
    shape[dim] = 0
    return [t if t.dim() != 1 or t.numel() != 0 else t.reshape(shape) for t in ts]


def cat(tensors: Sequence[Any], dim: int = 0, *, axis: Any = None) -> Tensor:
    """Concatenate along an existing dimension (``torch.cat``)."""
    if isinstance(tensors, Tensor):
        raise TypeError("cat(): argument 'tensors' must be tuple of Tensors, not Tensor")
    ts = _common(tensors)
    dim = axis if axis is not None else dim
    nd = builtins.max(t.dim() for t in ts)
    ts = _fit_legacy_empty(ts, _wrap_dim(dim, nd))
    return _as_tensor(named("CatBackward0", fnp.concatenate, _shape_ops._concatenate)(ts, axis=_wrap_dim(dim, nd)))


concat = concatenate = cat


def stack(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Stack along a new dimension (``torch.stack``)."""
    ts = _common(tensors)
    shapes = {tuple(t.shape) for t in ts}
    if len(shapes) != 1:
        i = next(k for k, t in enumerate(ts) if tuple(t.shape) != tuple(ts[0].shape))
        raise RuntimeError(
            f"stack expects each tensor to be equal size, but got [{', '.join(map(str, ts[0].shape))}] at entry 0 "
            f"and [{', '.join(map(str, ts[i].shape))}] at entry {i}"
        )
    stacked = named("StackBackward0", fnp.stack, _shape_ops._concatenate)
    return _as_tensor(stacked(ts, axis=_wrap_dim(dim, ts[0].dim() + 1)))


def hstack(tensors: Sequence[Any]) -> Tensor:
    ts = [_as_tensor(t) for t in tensors]
    return cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors: Sequence[Any]) -> Tensor:
    ts = [_as_tensor(t) for t in tensors]
    return cat([t if t.dim() > 1 else t.reshape(1, -1) for t in ts], 0)


def einsum(equation: str, *operands: Any) -> Tensor:
    """``torch.einsum`` through ``funcgrad.numpy.einsum``."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ts = _common(operands)
    return _as_tensor(named("EinsumBackward0", fnp.einsum, _linalg._einsum)(equation, *ts))


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    x, y = _promote(a, b)
    return _as_tensor(fnp.tensordot(x, y, axes=dims))


def broadcast_tensors(*tensors: Any) -> tuple[Any, ...]:
    ts = [_as_tensor(t) for t in tensors]
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in ts])
    return tuple(t.expand(*shape) for t in ts)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Any, ...]:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ts = [_as_tensor(t) for t in tensors]
    n = len(ts)
    xy = indexing == "xy" and n >= 2  # the first two axes swapped
    shape = [t.numel() for t in ts]
    if xy:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(ts):
        view = [1] * n
        view[1 - i if xy and i < 2 else i] = t.numel()
        out.append(t.reshape(view).expand(*shape))
    return tuple(out)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0) -> Tensor:
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return d.norm(p=p, dim=-1)


def cross(a: Tensor, b: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (default: the first dimension of size 3), as
    ``torch.cross``: ``a.cross(b, dim)``. Example: ``ft.cross(ft.eye(3), ft.ones(3, 3), dim=1)``."""
    out: Tensor = _as_tensor(a).cross(b, dim)
    return out


def view_as_real(x: Tensor) -> Tensor:
    """A complex tensor's elements as ``(re, im)`` pairs along a new last dimension: a view of the same
    memory, as ``torch.view_as_real`` (writes through it change ``x``).

    Example::

        ft.view_as_real(ft.tensor([1 + 2j]))   # tensor([[1., 2.]])
    """
    x = _as_tensor(x)
    if not x.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _as_tensor(view_as_real_array(x))


def atleast_1d(x: Tensor) -> Tensor:
    return x.reshape(1) if x.dim() == 0 else x


def result_type(a: Any, b: Any) -> _dt.dtype:
    return _dt.result_type(a, b)
