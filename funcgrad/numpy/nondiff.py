"""Functions without a derivative: queries, comparisons, logic, rounding, argmax ...

Queries (shape, ndim, dtype ...) are plain functions. The others are
declared with ``differentiable=False`` (one ``_nondiff`` line each, at the end of
the file, naming the batching rule): differentiating traces pass them through
with a zero derivative, while batching still sees them. Functions whose *values* come
from the input (``unique``, ``bincount`` with weights) are differentiable and
live in ``indexing``; ``full_like`` (differentiable in its fill value) lives
in ``creation``.

Those whose output shape depends on the values (``nonzero``, ``argwhere``,
``flatnonzero``) batch only when every example gives the same shape.
"""

from __future__ import annotations

import builtins
import functools
from typing import Any, Callable

import numpy as np
# Dtype queries and index builders that take no arrays: NumPy's own.
from numpy import diag_indices, indices, isscalar, issubdtype, promote_types, tril_indices, triu_indices  # noqa: F401

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, defprimitive, get_primitive, unbox_all
from ..core.batching import BatchBox
from ..core.staging import check_concrete
from ._batching import _aligned, _shift_axis, elementwise_rule, fallback, move_to_front, normalize_axis
from ._batching import batch_size as _batch_size
from ._util import backend_function, dtype

__all__ = [
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "can_cast", "lexsort",
    "ravel_multi_index", "ix_", "diag_indices", "indices", "isscalar", "issubdtype", "promote_types",
    "tril_indices", "triu_indices",
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "isnan", "isinf",
    "isfinite", "isneginf", "isposinf", "signbit", "logical_not", "floor", "ceil", "rint", "trunc",
    "fix", "sign", "count_nonzero", "any", "all", "iscomplex", "isreal", "searchsorted", "digitize",
    "zeros_like", "ones_like", "empty_like", "round", "around", "nanargmax", "nanargmin",
    "argpartition", "invert", "bitwise_not", "unravel_index", "tril_indices_from",
    "triu_indices_from", "diag_indices_from", "less", "less_equal", "greater", "greater_equal",
    "equal", "not_equal", "logical_and", "logical_or", "logical_xor", "isclose", "allclose",
    "array_equal", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", "isin", "heaviside", "gcd", "lcm", "array_equiv",
]

# Those that return a tuple of arrays: several results, so that vmap batches each one.
_MULTIPLE_RESULTS = {"nonzero", "unravel_index", "tril_indices_from", "triu_indices_from", "diag_indices_from"}


def _concrete(x: Any, fn: str) -> Any:
    """The value behind differentiation boxes (the same value); a vmap box is refused."""
    check_concrete(x, fn)
    while isinstance(x, Box):
        if isinstance(x, BatchBox):
            raise NotImplementedError(f"{fn} of a value batched by vmap is not supported")
        x = x._value
    return x


def shape(x: Any) -> tuple[int, ...]:
    """``numpy.shape``: the shape of an array, traced value, scalar or nested list.

    Example::

        fnp.shape(x)   # inside fg.grad too
    """
    if isinstance(x, Box):
        return x._shape()
    s = getattr(x, "shape", None)
    if s is not None:
        return tuple(s)
    return np.shape(x)


def ndim(x: Any) -> int:
    """``numpy.ndim``: the number of dimensions (traced values too)."""
    return len(shape(x))


def size(x: Any, axis: int | None = None) -> int:
    """``numpy.size``: number of elements (along ``axis`` if given), traced values too."""
    s = shape(x)
    if axis is not None:
        return s[axis]
    n = 1
    for d in s:
        n *= d
    return n


def result_type(*xs: Any) -> np.dtype:
    """``numpy.result_type`` that looks through traced values."""
    return np.result_type(*[_dtype_or_value(x) for x in xs])


def _dtype_or_value(x: Any) -> Any:
    """Arrays of any backend (and traced values) stand for their dtype; scalars and dtypes pass."""
    if isinstance(x, Box):
        return dtype(x)
    if isinstance(x, np.ndarray) or isinstance(x, (type, np.dtype, str, int, float, complex, bool)):
        return x
    d = getattr(x, "dtype", None)
    return x if d is None or isinstance(x, np.generic) else d


def iscomplexobj(x: Any) -> bool:
    """``numpy.iscomplexobj`` that looks through traced values."""
    return dtype(x).kind == "c"


def isrealobj(x: Any) -> bool:
    """``numpy.isrealobj`` that looks through traced values."""
    return not iscomplexobj(x)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """``numpy.can_cast``; a traced value or array stands for its dtype."""
    if isinstance(from_, Box) or hasattr(from_, "dtype"):
        from_ = dtype(from_)
    return bool(np.can_cast(from_, to, casting=casting))  # type: ignore[arg-type]


def lexsort(keys: Any, axis: int = -1) -> Any:
    """``numpy.lexsort`` (no derivative); the keys may be traced."""
    if isinstance(keys, (list, tuple)):
        keys = [_concrete(k, "lexsort") for k in keys]
    else:
        keys = _concrete(keys, "lexsort")
    xp = namespace_of(*keys) if isinstance(keys, list) else namespace_of(keys)
    if isinstance(keys, list) and xp is not np:
        keys = xp.stack(keys)
    return xp.lexsort(keys, axis=axis)


def ravel_multi_index(multi_index: Any, dims: Any, mode: str = "raise", order: str = "C") -> Any:
    """``numpy.ravel_multi_index`` (no derivative); the indices may be traced."""
    multi_index = tuple(_concrete(i, "ravel_multi_index") for i in multi_index)
    xp = namespace_of(*multi_index)
    return xp.ravel_multi_index(multi_index, dims, mode=mode, order=order)


def ix_(*args: Any) -> tuple[Any, ...]:
    """``numpy.ix_`` (no derivative); the index sequences may be traced."""
    args = tuple(_concrete(a, "ix_") for a in args)
    out: tuple[Any, ...] = namespace_of(*args).ix_(*args)
    return out


# --------------------------------------------------------------------------
# batching (vmap) rules
#
# Nothing here has a derivative, so a rule only has to get the batch right:
# elementwise functions broadcast; argmax/any/count_nonzero ... shift their axis
# past the batch axis; functions whose output shape depends on the values
# (nonzero, argwhere, flatnonzero) run per example and are stacked when every
# example gives the same shape, and are refused otherwise. The module shadows
# the builtins any/all/round, hence ``builtins.any`` below.

def _per_example_shape(x: Any, d: int | None) -> tuple[Any, ...]:
    s = shape(x)
    return s if d is None else s[:d] + s[d + 1:]


def _loop(fn: Callable[..., Any], args: list[Any], dims: list[Any], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The per-example loop (for a parameter batched in a way no vectorized call expresses)."""
    return fallback(get_primitive(fn), list(args), list(dims), _batch_size(args, dims), kwargs)


def _refuse_where(name: str) -> Callable[[tuple[Any, ...], dict[str, Any]], None]:
    """The ``check_kwargs`` of ufunc ``name``: traced calls refuse ``where=`` (with ``out=``
    it would be silently wrong: the engine writes the whole result into ``out``). Plain
    calls keep it."""
    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if "where" in kwargs:
            raise _where_error(name)

    return check


def _where_error(name: str) -> TypeError:
    return TypeError(
        f"funcgrad.numpy.{name}: where= is supported on plain arrays only, not on traced values; "
        f"use fnp.where(mask, {name}(...), other) instead"
    )


def _ufunc_rule(fn: Callable[..., Any], name: str, nin: int) -> Callable[..., Any]:
    rule = elementwise_rule(fn)

    def batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        if "where" in kwargs:
            raise _where_error(name)
        if len(args) > nin:
            raise TypeError(
                f"funcgrad.numpy.{name} on values batched by vmap: give out= as a keyword argument, "
                f"not as a positional one"
            )
        out: tuple[Any, int] = rule(args, dims, **kwargs)
        return out

    return batch


def _axis_rule(fn: Callable[..., Any], axis_pos: int, default: Any, flatten_when_none: bool) -> Callable[..., Any]:
    """Rule for ``fn(x, ..., axis, ...)`` batched in ``x``: the axis moves past the batch axis.

    ``axis`` sits at position ``axis_pos`` when given positionally. With
    ``flatten_when_none`` (argmax, argsort ...) ``axis=None`` flattens each example;
    otherwise (any, count_nonzero ...) it means every axis of an example.
    """

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        for key, value in kwargs.items():
            if isinstance(value, Box):
                raise TypeError(
                    f"funcgrad.numpy.{get_primitive(fn).name}: {key}= cannot be a traced value under vmap; "
                    f"apply it to the input first (e.g. fnp.logical_and(x, where))"
                )
        if builtins.any(d is not None for d in dims[1:]):
            return _loop(fn, args, dims, kwargs)
        x = move_to_front(args[0], dims[0])
        s = shape(x)
        per = len(s) - 1
        rest = list(args[1:])
        positional = len(args) > axis_pos
        axis = args[axis_pos] if positional else kwargs.pop("axis", default)
        if per == 0 and axis is not None:  # NumPy lets a 0-d array take axis 0 or -1 (as if 1-d)
            for a in axis if isinstance(axis, (tuple, list)) else (axis,):
                normalize_axis(a, 1)
            axis = None
        flat = axis is None and flatten_when_none
        if flat:
            n = 1
            for k in s[1:]:
                n *= k
            x = fnp.reshape(x, (s[0], n))
            new_axis: Any = 1
        elif axis is None:
            new_axis = tuple(range(1, per + 1))
        else:
            new_axis = _shift_axis(axis, per)
        if positional:
            rest[axis_pos - 1] = new_axis
        else:
            kwargs["axis"] = new_axis
        out = fn(x, *rest, **kwargs)
        if flat and kwargs.get("keepdims"):
            out = fnp.reshape(out, s[:1] + (1,) * per)
        return out, 0

    return rule


def _data_dependent_rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Rule for a function whose output shape depends on the values (nonzero ...):
    one call per example, stacked when all examples agree in shape, refused otherwise."""
    prim = get_primitive(fn)
    name = prim.name

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        size = _batch_size(args, dims)
        if size == 0:
            raise ValueError(
                f"vmap cannot batch {name} over an empty batch: its output shape depends on the "
                f"values, and there is no example to take it from"
            )
        results = []
        for b in range(size):
            one = [a if d is None else a[(slice(None),) * d + (b,)] for a, d in zip(args, dims)]
            out = prim.call(*one, **kwargs)
            results.append(tuple(out) if prim.multiple_results else (out,))
        first = tuple(shape(r) for r in results[0])
        for b, r in enumerate(results):
            got = tuple(shape(o) for o in r)
            if got != first:
                raise ValueError(
                    f"vmap cannot batch {name}: its output shape depends on the values, and the "
                    f"examples disagree (example 0 gives shape {_shapes(first)}, example {b} gives "
                    f"{_shapes(got)}). Call it outside vmap, or use a fixed-shape formulation "
                    f"(fnp.where(condition, x, y), a mask, or argsort) instead"
                )
        stacked = tuple(fnp.stack([r[k] for r in results]) for k in range(len(first)))
        if prim.multiple_results:
            return stacked, (0,) * len(stacked)
        return stacked[0], 0

    return rule


def _shapes(shapes: tuple[Any, ...]) -> str:
    return " and ".join(str(s) for s in shapes)


def _shaped_like_rule(fn: Callable[..., Any], pos: int) -> Callable[..., Any]:
    """Rule for ``fn`` whose output has the shape of argument ``pos`` (searchsorted's
    ``v``, digitize's and isin's first argument): batched there only, it is one call."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        if builtins.any(d is not None for i, d in enumerate(dims) if i != pos):
            return _loop(fn, args, dims, kwargs)
        return fn(*args, **kwargs), dims[pos]

    return rule


def _like_rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Rule for zeros_like(a, dtype, order, subok, shape) and its kin: batched where ``a`` is,
    unless a ``shape`` is given (then every example gets the same array)."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        if builtins.any(d is not None for d in dims[1:]):
            return _loop(fn, args, dims, kwargs)
        new_shape = args[4] if len(args) > 4 else kwargs.get("shape")
        return fn(*args, **kwargs), (dims[0] if new_shape is None else None)

    return rule


def _from_shape_rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Rule for tril_indices_from and its kin: the result depends only on the per-example
    shape, so it is the same for every example (not batched)."""
    prim = get_primitive(fn)

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        if builtins.any(d is not None for d in dims[1:]):
            return _loop(fn, args, dims, kwargs)
        a = unbox_all(args[0])
        xp = namespace_of(a)
        stand_in = xp.broadcast_to(xp.zeros((), dtype=a.dtype), _per_example_shape(args[0], dims[0]))
        out = prim.raw(stand_in, *args[1:], **kwargs)
        return out, (None,) * len(out)

    return rule


def _unravel_index_rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
    if builtins.any(d is not None for d in dims[1:]):
        return _loop(fnp.unravel_index, args, dims, kwargs)
    out = fnp.unravel_index(*args, **kwargs)
    return out, (dims[0],) * len(out)


def _allclose_rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    close = fnp.isclose(*_aligned(list(args), list(dims)), **kwargs)
    return fnp.all(close, axis=tuple(range(1, ndim(close)))), 0


def _array_equal_rule(args: list[Any], dims: list[Any], equal_nan: bool = False) -> tuple[Any, Any]:
    a, b = args[0], args[1]
    if len(args) > 2:
        equal_nan = args[2]
    if _per_example_shape(a, dims[0]) != _per_example_shape(b, dims[1]):
        return False, None
    a, b = move_to_front(a, dims[0]), move_to_front(b, dims[1])
    eq = fnp.equal(a, b)
    if equal_nan and (dtype(a).kind in "fc" or dtype(b).kind in "fc"):
        eq = fnp.logical_or(eq, fnp.logical_and(fnp.isnan(a), fnp.isnan(b)))
    return fnp.all(eq, axis=tuple(range(1, ndim(eq)))), 0


def _array_equiv_rule(args: list[Any], dims: list[Any]) -> tuple[Any, Any]:
    try:
        np.broadcast_shapes(_per_example_shape(args[0], dims[0]), _per_example_shape(args[1], dims[1]))
    except ValueError:
        return False, None
    eq = fnp.equal(*_aligned(list(args), list(dims)))
    return fnp.all(eq, axis=tuple(range(1, ndim(eq)))), 0


def _nondiff(name: str, n_arrays: int, batch_from: Callable[..., Any] | None = None, batch: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """Declare ``numpy.<name>`` (``n_arrays`` array arguments) as a primitive with no derivative.

    A ufunc refuses ``where=`` on traced values and batches as a broadcasting ufunc;
    the others name their batching rule.
    """
    np_fn = getattr(np, name)
    check = None
    if isinstance(np_fn, np.ufunc):
        batch_from = functools.partial(_ufunc_rule, name=name, nin=np_fn.nin)
        check = _refuse_where(name)
    return defprimitive(
        backend_function(name, n_arrays), name=name, differentiable=False, batch=batch, batch_from=batch_from,
        multiple_results=name in _MULTIPLE_RESULTS, check_kwargs=check,
    )


def _axis(axis_pos: int, default: Any, flatten_when_none: bool) -> Callable[..., Any]:
    return lambda fn: _axis_rule(fn, axis_pos, default, flatten_when_none)


def _shaped_like(pos: int) -> Callable[..., Any]:
    return lambda fn: _shaped_like_rule(fn, pos)


argmax: Callable[..., Any] = _nondiff("argmax", 1, _axis(1, None, True))
argmin: Callable[..., Any] = _nondiff("argmin", 1, _axis(1, None, True))
argsort: Callable[..., Any] = _nondiff("argsort", 1, _axis(1, -1, True))
argwhere: Callable[..., Any] = _nondiff("argwhere", 1, _data_dependent_rule)
nonzero: Callable[..., Any] = _nondiff("nonzero", 1, _data_dependent_rule)
flatnonzero: Callable[..., Any] = _nondiff("flatnonzero", 1, _data_dependent_rule)
isnan: Callable[..., Any] = _nondiff("isnan", 1)
isinf: Callable[..., Any] = _nondiff("isinf", 1)
isfinite: Callable[..., Any] = _nondiff("isfinite", 1)
isneginf: Callable[..., Any] = _nondiff("isneginf", 1, elementwise_rule)
isposinf: Callable[..., Any] = _nondiff("isposinf", 1, elementwise_rule)
signbit: Callable[..., Any] = _nondiff("signbit", 1)
logical_not: Callable[..., Any] = _nondiff("logical_not", 1)
floor: Callable[..., Any] = _nondiff("floor", 1)
ceil: Callable[..., Any] = _nondiff("ceil", 1)
rint: Callable[..., Any] = _nondiff("rint", 1)
trunc: Callable[..., Any] = _nondiff("trunc", 1)
fix: Callable[..., Any] = _nondiff("fix", 1, elementwise_rule)
sign: Callable[..., Any] = _nondiff("sign", 1)
count_nonzero: Callable[..., Any] = _nondiff("count_nonzero", 1, _axis(1, None, False))
any: Callable[..., Any] = _nondiff("any", 1, _axis(1, None, False))
all: Callable[..., Any] = _nondiff("all", 1, _axis(1, None, False))
iscomplex: Callable[..., Any] = _nondiff("iscomplex", 1, elementwise_rule)
isreal: Callable[..., Any] = _nondiff("isreal", 1, elementwise_rule)
searchsorted: Callable[..., Any] = _nondiff("searchsorted", 1, _shaped_like(1))
digitize: Callable[..., Any] = _nondiff("digitize", 1, _shaped_like(0))
_zeros_like = _nondiff("zeros_like", 1, _like_rule)
_ones_like = _nondiff("ones_like", 1, _like_rule)
_empty_like = _nondiff("empty_like", 1, _like_rule)
round: Callable[..., Any] = _nondiff("round", 1, elementwise_rule)
around: Callable[..., Any] = _nondiff("around", 1, elementwise_rule)
nanargmax: Callable[..., Any] = _nondiff("nanargmax", 1, _axis(1, None, True))
nanargmin: Callable[..., Any] = _nondiff("nanargmin", 1, _axis(1, None, True))
argpartition: Callable[..., Any] = _nondiff("argpartition", 1, _axis(2, -1, True))
invert: Callable[..., Any] = _nondiff("invert", 1)
bitwise_not: Callable[..., Any] = _nondiff("bitwise_not", 1)
unravel_index: Callable[..., Any] = _nondiff("unravel_index", 1, batch=_unravel_index_rule)
tril_indices_from: Callable[..., Any] = _nondiff("tril_indices_from", 1, _from_shape_rule)
triu_indices_from: Callable[..., Any] = _nondiff("triu_indices_from", 1, _from_shape_rule)
diag_indices_from: Callable[..., Any] = _nondiff("diag_indices_from", 1, _from_shape_rule)
less: Callable[..., Any] = _nondiff("less", 2)
less_equal: Callable[..., Any] = _nondiff("less_equal", 2)
greater: Callable[..., Any] = _nondiff("greater", 2)
greater_equal: Callable[..., Any] = _nondiff("greater_equal", 2)
equal: Callable[..., Any] = _nondiff("equal", 2)
not_equal: Callable[..., Any] = _nondiff("not_equal", 2)
logical_and: Callable[..., Any] = _nondiff("logical_and", 2)
logical_or: Callable[..., Any] = _nondiff("logical_or", 2)
logical_xor: Callable[..., Any] = _nondiff("logical_xor", 2)
isclose: Callable[..., Any] = _nondiff("isclose", 2, elementwise_rule)
allclose: Callable[..., Any] = _nondiff("allclose", 2, batch=_allclose_rule)
array_equal: Callable[..., Any] = _nondiff("array_equal", 2, batch=_array_equal_rule)
floor_divide: Callable[..., Any] = _nondiff("floor_divide", 2)
bitwise_and: Callable[..., Any] = _nondiff("bitwise_and", 2)
bitwise_or: Callable[..., Any] = _nondiff("bitwise_or", 2)
bitwise_xor: Callable[..., Any] = _nondiff("bitwise_xor", 2)
left_shift: Callable[..., Any] = _nondiff("left_shift", 2)
right_shift: Callable[..., Any] = _nondiff("right_shift", 2)
isin: Callable[..., Any] = _nondiff("isin", 2, _shaped_like(0))
heaviside: Callable[..., Any] = _nondiff("heaviside", 2)
gcd: Callable[..., Any] = _nondiff("gcd", 2)
lcm: Callable[..., Any] = _nondiff("lcm", 2)
array_equiv: Callable[..., Any] = _nondiff("array_equiv", 2, batch=_array_equiv_rule)


# Inside a transform these return a constant box (see funcgrad.numpy.inplace and
# funcgrad.numpy.creation); the plain primitives are ``_zeros_like`` ...

from .inplace import creation_function  # noqa: E402

zeros_like: Callable[..., Any] = creation_function(_zeros_like)
ones_like: Callable[..., Any] = creation_function(_ones_like)
empty_like: Callable[..., Any] = creation_function(_empty_like)
