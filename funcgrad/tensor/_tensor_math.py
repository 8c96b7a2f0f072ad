"""Arithmetic, elementwise, comparison, reduction and linear-algebra methods and operators of ``Tensor``.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` (its only subclass). It takes the helpers it shares from
``tensor_helpers`` and ``size_device`` and never imports ``tensor.py``: it is generic in the Tensor class
(``TensorT``, see ``tensor_type.py``).
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import operator
import warnings
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..numpy import elementwise as _elementwise
from ..numpy import indexing as _indexing
from ..nn.rectifier import relu as _relu_primitive
from ..scipy.special import expit
from . import dtypes as _dt
from . import boxes as _boxes

from . import linalg
from .conditional import where
from .toplevel import bernoulli
from .tensor_class import is_tensor, new_tensor
from .torch_names import named
from .size_device import DimArg, MaxMin
from .tensor_helpers import evenly_shared
from .tensor_helpers import (
    _pyint, _pybool, _dims, _wrap_dim, _raw, _as_tensor, _cond, _as_operand, _cast, _promote, _scalar_like, _zero_like_scalar, _binary, _binop, _compare, _logical, _wrap_nondiff, _float, _unary,
)
from .tensor_type import TensorBase, TensorT


_MATMUL_NAMES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (3, 3): "BmmBackward0"}  # PyTorch's, by ndims


def _compare_op(fn: Any) -> Any:
    """The comparison method ``self (op) other`` (a bool tensor, no gradient), through ``_compare``."""

    def op(self: TensorT, other: Any) -> "TensorT":
        return _compare(fn, self, other)

    return op


def _logical_op(logical: Any, bitwise: Any = None) -> Any:
    """The method ``self (op) other``: ``logical`` on bool tensors (always without ``bitwise``), else ``bitwise``."""

    def op(self: TensorT, other: Any) -> "TensorT":
        return _logical(logical if bitwise is None or self._value.dtype.kind == "b" else bitwise, self, other)

    return op


def _promoted_op(fn: Any, to_float: bool = False) -> Any:
    """The method ``fn(self, other)`` on both promoted to a common dtype (floating first when ``to_float``)."""

    def op(self: TensorT, other: Any) -> "TensorT":
        a, b = _promote(_float(self) if to_float else self, other)
        return fn(a, b)

    return op


def _untracked_reduction(t: TensorT, name: str, dim: Any, dtype: Any, **kwargs: Any) -> "TensorT":
    """``funcgrad.numpy.<name>`` of ``t``'s value over ``dim``, as a tensor without history (in ``dtype`` when
    given); a scalar result becomes a 0-d array of the value's namespace (a device result stays on the device,
    a transform's traced value stays traced: ``ft.func.vmap`` of ``t.all()``)."""
    return _untracked(getattr(fnp, name)(t._value, axis=_dims(dim, t.dim()), **kwargs), dtype)


def _untracked(value: Any, dtype: Any) -> Any:
    out = fnp.asarray(value)
    return new_tensor(out if dtype is None else fnp.astype(out, dtype))


def _arg_extreme(fn: Callable[..., Any], t: TensorT, dim: Any, keepdim: bool) -> "TensorT":
    """``argmax``/``argmin``: over the flattened tensor when ``dim`` is None (``keepdim`` then ignored)."""
    raw = t._value
    if dim is None:
        return _untracked(fn(raw), np.int64)
    return _untracked(fn(raw, axis=_wrap_dim(dim, raw.ndim), keepdims=keepdim), np.int64)


class _MathMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ arithmetic
    __add__, __sub__, __mul__, __floordiv__, __mod__ = (
        _binop(f) for f in (fnp.add, fnp.subtract, fnp.multiply, fnp.floor_divide, fnp.remainder))
    __radd__, __rmul__, __rfloordiv__, __rmod__ = (
        _binop(f, reflected=True) for f in (fnp.add, fnp.multiply, fnp.floor_divide, fnp.remainder))
    __truediv__, __rtruediv__ = _binop(fnp.divide, true_div=True), _binop(fnp.divide, reflected=True, true_div=True)
    mul = multiply = __mul__
    floor_divide, remainder, true_divide, fmod = __floordiv__, __mod__, __truediv__, _binop(fnp.fmod)

    def __rsub__(self: TensorT, other: Any) -> "TensorT":
        return _binary(named("RsubBackward1", fnp.subtract), other, self)

    def __rpow__(self: TensorT, other: Any) -> "TensorT":
        return _binary(named("PowBackward2", fnp.power), other, self)

    def __rmatmul__(self: TensorT, other: Any) -> "TensorT":
        return _as_tensor(other).matmul(self)

    def __pos__(self: TensorT) -> "TensorT":
        return self

    def __invert__(self: TensorT) -> "TensorT":
        if self._value.dtype.kind not in "biu":
            raise TypeError("~ (bitwise_not) is only supported for integer and boolean tensors")
        return _wrap_nondiff(fnp.logical_not(self) if self._value.dtype.kind == "b" else
                             new_tensor(~self._value))

    __and__, __or__, __xor__ = (_logical_op(f, g) for f, g in ((fnp.logical_and, fnp.bitwise_and),
                                                             (fnp.logical_or, fnp.bitwise_or),
                                                             (fnp.logical_xor, fnp.bitwise_xor)))
    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def add(self: TensorT, other: Any, *, alpha: Any = 1) -> "TensorT":
        if alpha == 1:
            return _binary(fnp.add, self, other)
        return keep_alpha(_binary(fnp.add, self, _as_operand(other) * alpha), alpha)

    def sub(self: TensorT, other: Any, *, alpha: Any = 1) -> "TensorT":
        if alpha == 1:
            return _binary(fnp.subtract, self, other)
        return keep_alpha(_binary(fnp.subtract, self, _as_operand(other) * alpha), alpha)

    subtract = sub

    def div(self: TensorT, other: Any, *, rounding_mode: str | None = None) -> "TensorT":
        if rounding_mode is None:
            return _binary(fnp.divide, self, other, true_div=True)
        if rounding_mode == "floor":
            return _binary(fnp.floor_divide, self, other)
        if rounding_mode == "trunc":
            q = _binary(fnp.divide, self, other, true_div=True)
            return _wrap_nondiff(fnp.trunc(q)).to(q.dtype if self.is_floating_point() else self.dtype)
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")

    divide = div

    def pow(self: TensorT, exponent: Any) -> "TensorT":
        if is_tensor(exponent) and (exponent.dim() > 0 or exponent._requires_grad):
            return _binary(named("PowBackward1", fnp.power), self, exponent)
        if isinstance(exponent, (_pyint, np.integer)) and not isinstance(exponent, _pybool) and exponent == 2 \
                and self._value.dtype.kind == "f":
            out: TensorT = fnp.square(self)  # the same node (PowBackward0), cheaper
            return out
        return _binary(fnp.power, self, exponent)  # PowBackward0: the node's own name

    __pow__ = pow

    def float_power(self: TensorT, exponent: Any) -> "TensorT":
        return self.double().pow(exponent.double() if is_tensor(exponent) else exponent)

    def neg(self: TensorT) -> "TensorT":
        if self._value.dtype.kind == "b":
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        return fnp.negative(self)

    negative = __neg__ = neg

    def reciprocal(self: TensorT) -> "TensorT":
        return _binary(named("ReciprocalBackward0", fnp.divide), 1.0, _float(self), true_div=True)

    def square(self: TensorT) -> "TensorT":
        return named("PowBackward0", fnp.square)(self)

    sqrt, exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan, tanh, sinh, cosh, asin, acos, atan = (
        _unary(getattr(fnp, n)) for n in ("sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
                            "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan"))
    arcsin, arccos, arctan = asin, acos, atan

    def rsqrt(self: TensorT) -> "TensorT":
        return _binary(named("RsqrtBackward0", fnp.divide), 1.0, fnp.sqrt(_float(self)), true_div=True)

    atan2 = arctan2 = _promoted_op(fnp.arctan2, to_float=True)

    sigmoid = _unary(expit)  # SigmoidBackward0

    def relu(self: TensorT) -> "TensorT":
        if self._value.dtype.kind == "b":
            raise RuntimeError('"clamp_min_cpu" not implemented for \'Bool\'')
        # one pass; NaN stays NaN, and its gradient passes there (PyTorch's threshold_backward); nan_passes given
        # by position, so that the call takes the recorder's one frame (a keyword call takes its steps)
        return _relu_primitive(self, True)

    def bernoulli(self: TensorT, p: Any = None, *, generator: Any = None) -> "TensorT":
        """0/1 draws with probability ``self`` (or ``p``); no gradient. Example: ``ft.full((3,), 0.5).bernoulli()``."""
        return bernoulli(self, p, generator=generator)

    def softmax(self: TensorT, dim: builtins.int, dtype: Any = None) -> "TensorT":
        x = _float(self if dtype is None else self.to(dtype))
        d = _wrap_dim(dim, x.dim())
        m = new_tensor(namespace_of(x._value).max(x._value, axis=d, keepdims=True)) if x.numel() else 0.0
        e = (x - m).exp()
        return _binary(named("SoftmaxBackward0", fnp.divide), e, e.sum(d, keepdim=True), true_div=True)

    def log_softmax(self: TensorT, dim: builtins.int, dtype: Any = None) -> "TensorT":
        x = _float(self if dtype is None else self.to(dtype))
        d = _wrap_dim(dim, x.dim())
        return _binary(named("LogSoftmaxBackward0", fnp.subtract), x, x.logsumexp(d, keepdim=True))

    def logsumexp(self: TensorT, dim: DimArg, keepdim: builtins.bool = False) -> "TensorT":
        x = _float(self)
        axes = _dims(dim, x.dim())
        raw = x._value
        ns = namespace_of(raw)
        m = ns.max(raw, axis=axes, keepdims=True) if raw.size else ns.zeros((1,) * raw.ndim, raw.dtype)
        m = ns.where(ns.isfinite(m), m, ns.zeros_like(m))
        s = fnp.sum(fnp.exp(x - new_tensor(m)), axis=axes, keepdims=True)
        if keepdim:
            return _binary(named("LogsumexpBackward0", fnp.add), fnp.log(s), new_tensor(m))
        out = fnp.log(s) + new_tensor(m)
        squeeze = named("LogsumexpBackward0", fnp.squeeze)
        return squeeze(out, axis=axes if axes is not None else tuple(range(raw.ndim)))

    sign, floor, ceil, trunc, isnan, isinf, isfinite, logical_not, abs = (
        _unary(getattr(fnp, n), to_float=False)
        for n in ("sign", "floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "logical_not", "abs"))

    sgn, absolute, __abs__ = sign, abs, abs

    def round(self: TensorT, decimals: builtins.int = 0) -> "TensorT":
        return _wrap_nondiff(fnp.round(self, decimals) if decimals else fnp.rint(self))

    def frac(self: TensorT) -> "TensorT":
        return self - self.trunc()

    def clamp(self: TensorT, min: Any = None, max: Any = None) -> "TensorT":  # noqa: A002
        """Limit to ``[min, max]``, with PyTorch 2.15's gradient.

        Number bounds: the gradient passes only strictly inside, ``min < x < max``
        (zero at a bound). Tensor bounds: ``minimum(maximum(x, min), max)``, so a tie
        with a bound splits the gradient evenly between ``x`` and the bound. The node is
        PyTorch's: ``ClampBackward1`` (number bounds, one or both) or ``ClampBackward0``.

        Example::

            ft.tensor([-1.0, 0.5, 3.0]).clamp(0, 1)    # tensor([0.0000, 0.5000, 1.0000])
        """
        return _clamp(self, min, max, "ClampBackward0" if is_tensor(min) or is_tensor(max) else "ClampBackward1")

    clip = clamp

    def clamp_min(self: TensorT, min: Any) -> "TensorT":  # noqa: A002
        return _clamp(self, min, None, f"ClampMinBackward{int(is_tensor(min))}")

    def clamp_max(self: TensorT, max: Any) -> "TensorT":  # noqa: A002
        return _clamp(self, None, max, f"ClampMaxBackward{int(is_tensor(max))}")

    maximum, minimum = _promoted_op(fnp.maximum), _promoted_op(fnp.minimum)

    def lerp(self: TensorT, end: Any, weight: Any) -> "TensorT":
        return self + weight * (end - self)

    def where(self: TensorT, condition: Any, other: Any) -> "TensorT":
        return where(condition, self, other)

    def masked_fill(self: TensorT, mask: Any, value: Any) -> "TensorT":
        m = _raw(mask)
        if getattr(m, "dtype", None) is not None and m.dtype.kind != "b":
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {_dt.from_numpy_dtype(m.dtype)}")
        v = value if is_tensor(value) else _scalar_like(value, self)
        v = _cast(_as_tensor(v), self.dtype) if is_tensor(v) else v
        return _as_tensor(named("MaskedFillBackward0", fnp.where, _elementwise._where)(_cond(m), v, self))

    def conj(self: TensorT) -> "TensorT":
        return fnp.conj(self) if self.is_complex() else self

    conj_physical = conj

    def resolve_conj(self: TensorT) -> "TensorT":
        return self

    @property
    def real(self: TensorT) -> "TensorT":
        return fnp.real(self) if self.is_complex() else self

    @property
    def imag(self: TensorT) -> "TensorT":
        if not self.is_complex():
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return fnp.imag(self)

    def angle(self: TensorT) -> "TensorT":
        return fnp.angle(_float(self))

    # ------------------------------------------------------------------ comparisons
    __eq__, __ne__, __lt__, __le__, __gt__, __ge__ = map(
        _compare_op, (fnp.equal, fnp.not_equal, fnp.less, fnp.less_equal, fnp.greater, fnp.greater_equal))

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__
    greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne

    def equal(self: TensorT, other: "TensorT") -> builtins.bool:
        """True if both tensors have the same shape and elements."""
        o = _as_tensor(other)
        if self.shape != o.shape:
            return False
        return _pybool(namespace_of(self._value).all(self._value == o._value))

    def allclose(self: TensorT, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                 equal_nan: builtins.bool = False) -> builtins.bool:
        o = _as_tensor(other)
        return _pybool(namespace_of(self._value).allclose(self._value, o._value, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def isclose(self: TensorT, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                equal_nan: builtins.bool = False) -> "TensorT":
        o = _as_tensor(other)
        close = namespace_of(self._value).isclose(self._value, o._value, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return new_tensor(close)

    logical_and, logical_or, logical_xor = map(_logical_op, (fnp.logical_and, fnp.logical_or, fnp.logical_xor))

    # ------------------------------------------------------------------ reductions
    def sum(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False, *, dtype: Any = None,
            axis: Any = None) -> "TensorT":
        dim = axis if dim is None else dim
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind in "biu" and dtype is None:
            x = _cast(x, _dt.int64)
        if dim is None:  # the node's own name: SumBackward0
            out: TensorT = fnp.sum(x, keepdims=keepdim)
            return out
        return named("SumBackward1", fnp.sum)(x, axis=_dims(dim, x.dim()), keepdims=keepdim)

    def nansum(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False) -> "TensorT":
        return fnp.where(self._value != self._value, 0, self).sum(dim, keepdim)

    def mean(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False, *, dtype: Any = None,
             axis: Any = None) -> "TensorT":
        dim = axis if dim is None else dim
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind not in "fc":
            raise NotImplementedError(  # a RuntimeError subclass, as PyTorch 2.15 raises
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {_dt.SCALAR_NAMES[x.dtype]}"
            )
        if dim is None:  # the node's own name: MeanBackward0
            out: TensorT = fnp.mean(x, keepdims=keepdim)
            return out
        return named("MeanBackward1", fnp.mean)(x, axis=_dims(dim, x.dim()), keepdims=keepdim)

    def prod(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> "TensorT":
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind in "biu" and dtype is None:
            x = _cast(x, _dt.int64)
        return fnp.prod(x, axis=None if dim is None else _wrap_dim(dim, x.dim()), keepdims=keepdim)

    def median(self: TensorT, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """The lower median (PyTorch's: no averaging); where a NaN is reduced, NaN and the index of the first
        NaN, as PyTorch. With ``dim``, ``(values, indices)``. Example: ``ft.tensor([3.0, 1.0, 2.0, 4.0]).median()``
        is ``tensor(2.)``."""
        if dim is None:  # the gradient shared by the elements equal to the median, as PyTorch's
            return evenly_shared(self, self.reshape(-1).median(0).values, "MedianBackward0")
        if not self.dim():
            return self.reshape(1).median(0)
        d = _wrap_dim(dim, self.dim())
        vals, idx = self.sort(d, stable=True)  # NaNs last, in their order
        k = (self.shape[d] - 1) // 2
        nans = self.isnan().sum(d, keepdim=True)
        pos = (nans > 0).long() * (self.shape[d] - nans - k) + k  # the first NaN where there are NaNs
        v, i = vals.gather(d, pos), idx.gather(d, pos)
        return MaxMin(v, i) if keepdim else MaxMin(v.squeeze(d), i.squeeze(d))

    def _reduce_extreme(self: TensorT, which: str, dim: Any, keepdim: builtins.bool) -> Any:
        """``max``/``min`` (``which``): the full extreme, ``(values, indices)`` along ``dim``, or elementwise."""
        name = which.capitalize()
        if dim is None:
            if self.numel() == 0:
                raise RuntimeError(f"{which}(): Expected reduction dim to be specified for input.numel() == 0. "
                                   f"Specify the reduction dim with the 'dim' argument.")
            return named(f"{name}Backward1", getattr(fnp, which))(self)
        if is_tensor(dim):
            return self.maximum(dim) if which == "max" else self.minimum(dim)
        d = _wrap_dim(dim, self.dim())
        raw = self._value
        ns = namespace_of(raw)
        if not raw.ndim:
            return MaxMin(named(f"{name}Backward0", fnp.copy)(self), new_tensor(ns.zeros((), np.int64)))
        idx = getattr(ns, "arg" + which)(raw, axis=d, keepdims=True)
        if keepdim:
            vals = named(f"{name}Backward0", fnp.take_along_axis, _indexing._getitem)(self, idx, axis=d)
        else:
            vals = named(f"{name}Backward0", fnp.squeeze)(fnp.take_along_axis(self, idx, axis=d), axis=d)
            idx = ns.squeeze(idx, axis=d)
        return MaxMin(vals, new_tensor(idx.astype(np.int64)))

    def max(self: TensorT, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """Full maximum, or ``(values, indices)`` along ``dim``; ``max(other)`` is elementwise."""
        return self._reduce_extreme("max", dim, keepdim)

    def min(self: TensorT, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        return self._reduce_extreme("min", dim, keepdim)

    def amax(self: TensorT, dim: DimArg = (), keepdim: builtins.bool = False) -> "TensorT":
        return named("AmaxBackward0", fnp.max)(self, axis=_dims(dim, self.dim()), keepdims=keepdim)

    def amin(self: TensorT, dim: DimArg = (), keepdim: builtins.bool = False) -> "TensorT":
        return named("AminBackward0", fnp.min)(self, axis=_dims(dim, self.dim()), keepdims=keepdim)

    def argmax(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False) -> "TensorT":
        return _arg_extreme(fnp.argmax, self, dim, keepdim)

    def argmin(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False) -> "TensorT":
        return _arg_extreme(fnp.argmin, self, dim, keepdim)

    def argsort(self: TensorT, dim: builtins.int = -1, descending: builtins.bool = False,
                stable: builtins.bool = False) -> "TensorT":
        raw = self._value
        return _untracked(fnp.argsort(-raw if descending else raw, axis=_wrap_dim(dim, raw.ndim), kind="stable"),
                          np.int64)

    def sort(self: TensorT, dim: builtins.int = -1, descending: builtins.bool = False, stable: builtins.bool = False) -> Any:
        idx = self.argsort(dim, descending)
        vals = self.gather(_wrap_dim(dim, self.dim()), idx) if self.dim() else self.clone()
        return MaxMin(vals, idx)

    def topk(self: TensorT, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True,
             sorted: builtins.bool = True) -> Any:  # noqa: A002
        idx = self.argsort(dim, descending=largest)
        d = _wrap_dim(dim, self.dim())
        idx = idx.narrow(d, 0, k).contiguous()
        return MaxMin(self.gather(d, idx), idx)

    def _var(self: TensorT, dim: Any, unbiased: Any, keepdim: builtins.bool, correction: Any,
             std: builtins.bool) -> "TensorT":
        if isinstance(unbiased, (_pyint, tuple, list)) and not isinstance(unbiased, _pybool) and dim is None:
            dim, unbiased = unbiased, True  # var(dim) positional
        ddof = correction if correction is not None else (1 if unbiased in (None, True) else 0)
        x = _float(self)
        spread = named("StdBackward0", fnp.std) if std else named("VarBackward0", fnp.var)
        axes = _dims(dim, x.dim())
        reduced = x.numel() if axes is None else builtins.int(np.prod([x.shape[a] for a in axes]))
        if reduced - ddof > 0:
            return spread(x, axis=axes, ddof=ddof, keepdims=keepdim)
        warnings.warn(f"{'std' if std else 'var'}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
        with warnings.catch_warnings():  # (PyTorch's warning, not NumPy's too)
            warnings.filterwarnings("ignore", "Degrees of freedom", RuntimeWarning)
            return spread(x, axis=axes, ddof=ddof, keepdims=keepdim)

    def var(self: TensorT, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *,
            correction: Any = None) -> "TensorT":
        return self._var(dim, unbiased, keepdim, correction, False)

    def std(self: TensorT, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *,
            correction: Any = None) -> "TensorT":
        return self._var(dim, unbiased, keepdim, correction, True)

    def norm(self: TensorT, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False,
             dtype: Any = None) -> "TensorT":
        x = _float(self)
        axes = _dims(dim, x.dim())
        name = "LinalgVectorNormBackward0"
        if p in (2, "fro", None):  # (x * x, not |x| * |x|: the second derivative at 0 is 2, not 0)
            sq = fnp.real(x * fnp.conj(x)) if x.is_complex() else x * x
            out = _root_flat_at_zero(fnp.sum(sq, axis=axes, keepdims=keepdim), fnp.sqrt, name)
        elif p == 1:
            out = named(name, fnp.sum)(fnp.abs(x), axis=axes, keepdims=keepdim)
        elif p in (float("inf"), "inf"):
            out = named(name, fnp.max)(fnp.abs(x), axis=axes, keepdims=keepdim)
        else:
            out = _root_flat_at_zero(fnp.sum(fnp.abs(x) ** p, axis=axes, keepdims=keepdim),
                                     lambda s: _binary(fnp.power, s, 1.0 / p), name)
        return out

    def cumsum(self: TensorT, dim: builtins.int, dtype: Any = None) -> "TensorT":
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind in "biu" and dtype is None:
            x = _cast(x, _dt.int64)
        return fnp.cumsum(x, axis=_wrap_dim(dim, x.dim()))

    def cumprod(self: TensorT, dim: builtins.int, dtype: Any = None) -> "TensorT":
        x = self if dtype is None else self.to(dtype)
        return fnp.cumprod(x, axis=_wrap_dim(dim, x.dim()))

    def all(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False) -> "TensorT":
        return _untracked_reduction(self, "all", dim, None, keepdims=keepdim)

    def any(self: TensorT, dim: DimArg = None, keepdim: builtins.bool = False) -> "TensorT":
        return _untracked_reduction(self, "any", dim, None, keepdims=keepdim)

    def count_nonzero(self: TensorT, dim: DimArg = None) -> "TensorT":
        return _untracked_reduction(self, "count_nonzero", dim, np.int64)

    # ------------------------------------------------------------------ linear algebra
    def matmul(self: TensorT, other: Any) -> "TensorT":
        other = _as_tensor(other)
        nd = (self._value.ndim, other._value.ndim)
        if 0 in nd:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {nd[0]}D and {nd[1]}D")
        if nd == (2, 2):  # the node's own name: MmBackward0
            return _binary(fnp.matmul, self, other)
        return _binary(named(_MATMUL_NAMES.get(nd, "MatmulBackward0"), fnp.matmul), self, other)

    __matmul__ = matmul

    def mm(self: TensorT, mat2: "TensorT") -> "TensorT":
        if self.dim() != 2 or _as_tensor(mat2).dim() != 2:
            raise RuntimeError("self must be a matrix" if self.dim() != 2 else "mat2 must be a matrix")
        return self.matmul(mat2)

    def bmm(self: TensorT, mat2: "TensorT") -> "TensorT":
        if self.dim() != 3 or _as_tensor(mat2).dim() != 3:
            raise RuntimeError("batch1 must be a 3D tensor" if self.dim() != 3 else "batch2 must be a 3D tensor")
        return self.matmul(mat2)

    def mv(self: TensorT, vec: "TensorT") -> "TensorT":
        return self.matmul(vec)

    def dot(self: TensorT, other: "TensorT") -> "TensorT":
        if self.dim() != 1 or _as_tensor(other).dim() != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.dim()}D and {_as_tensor(other).dim()}D tensors")
        return self.matmul(other)

    def inverse(self: TensorT) -> "TensorT":
        return linalg.inv(self)

    def det(self: TensorT) -> "TensorT":
        return linalg.det(self)

    def logdet(self: TensorT) -> "TensorT":
        sign, logabs = linalg.slogdet(self)
        if self.is_complex():
            return logabs + sign.log()
        return where(sign._value < 0, float("nan"), where(sign._value == 0, float("-inf"), logabs))

    def cholesky(self: TensorT, upper: builtins.bool = False) -> "TensorT":
        return linalg.cholesky(self, upper=upper)

    def outer(self: TensorT, vec2: "TensorT") -> "TensorT":
        return self.unsqueeze(1) * _as_tensor(vec2).unsqueeze(0)

    ger = outer


def _root_flat_at_zero(total: Any, root: Callable[[Any], Any], name: str) -> Any:
    """``root(total)`` (a p-norm from its sum of powers) whose gradient is 0 where the norm is 0, as
    PyTorch's norm backward (the root's own derivative there is infinite, times 0: NaN); the node of
    the last op is ``name``. The zeros are never read on the host."""
    zero = total == 0
    return named(name, fnp.where, _elementwise._where)(zero, 0.0, root(fnp.where(zero, 1.0, total)))


def keep_alpha(out: TensorT, alpha: Any) -> TensorT:
    """``out`` of ``add``/``sub``/``rsub`` with ``alpha``, which is folded into the other operand when recorded:
    its node keeps the number for PyTorch's ``grad_fn._saved_alpha`` (see torch_saved.py)."""
    node = getattr(out, "grad_fn", None)
    if node is not None and node.name() in ("AddBackward0", "SubBackward0", "RsubBackward1"):
        node._alpha = alpha
    return out


def _clamp(x: TensorT, min: Any, max: Any, name: str) -> TensorT:  # noqa: A002
    """``x.clamp(min, max)`` recorded as the node ``name`` (see ``Tensor.clamp``)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if min is not None and max is not None and not is_tensor(min) and not is_tensor(max):
        return _clamp_between_numbers(x, min, max, name)
    steps = [(bound, tensor_fn, beyond) for bound, tensor_fn, beyond in
             ((min, fnp.maximum, operator.le), (max, fnp.minimum, operator.ge)) if bound is not None]
    out = x
    for k, (bound, tensor_fn, beyond) in enumerate(steps):
        last = k == len(steps) - 1  # the node of the op's result: PyTorch's name
        a, b = _promote(out, bound)  # (a NumPy scalar bound becomes a Python number there)
        if is_tensor(bound):
            out = (named(name, tensor_fn) if last else tensor_fn)(a, b)
        else:
            out = (named(name, fnp.where, _elementwise._where) if last else fnp.where)(
                _cond(beyond(_raw(a), _raw(b))), b, a)
    if not is_tensor(out):
        out = new_tensor(_boxes._as_array(out))
    return out


def _clamp_between_numbers(x: TensorT, low: Any, high: Any, name: str) -> TensorT:
    """``x.clamp(low, high)`` for number bounds as one recorded op (one node, as PyTorch's): ``x`` where
    ``low < x < high`` (the gradient passes), the bound elsewhere (``high`` everywhere when
    ``low > high``, as PyTorch), NaN kept."""
    a, lo = _promote(x, low)
    a, hi = _promote(a, high)
    v = _raw(a)
    at_bound = (v <= lo) | (v >= hi)
    fill = fnp.astype(fnp.where((v >= hi) if lo <= hi else True, hi, lo), fnp.result_type(v))
    return named(name, fnp.where, _elementwise._where)(_cond(at_bound), _cond(fill), a)
