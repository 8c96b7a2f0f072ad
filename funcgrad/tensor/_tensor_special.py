"""Elementwise maths methods of ``Tensor`` beyond ``_tensor_math``: inverse hyperbolic functions, the special
functions (``erf``, ``erfinv``, ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``, ``i0``, ``igamma``, ``logit``,
``xlogy``, ``sinc``), binary maths (``hypot``, ``logaddexp``, ``copysign``, ``fmax``, ``ldexp``, ``gcd``, ...), the
bitwise operations, and the in-place ``X_`` form of every elementwise method.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` that does not import ``tensor.py``: each method applies a
``funcgrad.numpy`` / ``funcgrad.scipy.special`` primitive to the tensor (a Tensor is a box of the tensor
trace, so the call is recorded and returns a Tensor), or composes the tensor's own methods. Integer and bool
inputs are promoted as PyTorch does (``dtypes.result_type``; to the default float dtype for the functions
that are only defined on floats). Conditions are bool Tensors (never a tensor's raw value), so that the
methods also run under ``ft.func``'s transforms, where that value is traced.

Example::

    x = ft.tensor([0.1, 0.5], requires_grad=True)
    x.erfinv().sum().backward()          # d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)^2)
    x.detach().clone().lgamma_()         # in place
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import collections
import math
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp
import funcgrad.scipy.special as fsp

from . import dtypes as _dt
from .inplace_variant import inplace_variant
from .tensor_class import is_tensor, new_tensor
from .tensor_helpers import _float as _floating  # ints and bools to the default float dtype (PyTorch promotion)
from .tensor_type import TensorBase, TensorT

_NUMBER = (builtins.bool, builtins.int, builtins.float, builtins.complex, np.generic)

# torch.return_types.frexp
Frexp = collections.namedtuple("frexp", ["mantissa", "exponent"])  # type: ignore[name-match]


def _scalar_name(t: TensorT) -> str:
    return _dt.SCALAR_NAMES[t.dtype]


def _operand(op: str, other: Any) -> Any:
    """``other`` of a binary method: a Tensor or a Python number (NumPy scalars become numbers)."""
    if is_tensor(other):
        return other
    if isinstance(other, np.generic):
        return other.item()
    if isinstance(other, _NUMBER):
        return other
    raise TypeError(f"{op}(): argument 'other' must be Tensor or Number, not {type(other).__name__}")


def _promoted(op: str, a: Any, b: Any, to_float: bool = False, floats_only: bool = False) -> tuple[Any, Any]:
    """``a``, ``b`` (Tensors or numbers) cast to PyTorch's result dtype (a floating one when ``to_float``);
    numbers stay numbers (weak, as in PyTorch). ``floats_only``: integer or bool operands alone are refused
    with PyTorch's error (its kernel for ``op`` has no integer form)."""
    a, b = _operand(op, a), _operand(op, b)
    rt = _dt.result_type(a, b)
    if floats_only and not (rt.is_floating_point or rt.is_complex):
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'{_dt.SCALAR_NAMES[rt]}\'')
    if to_float and not (rt.is_floating_point or rt.is_complex):
        rt = _dt.get_default_dtype()
    return (a.to(rt) if is_tensor(a) else a), (b.to(rt) if is_tensor(b) else b)


def _float_unary(fn: Callable[..., Any], name: str) -> Callable[[TensorBase[TensorT]], TensorT]:
    """The method ``t.<name>()``: ``fn(t)``, integers and booleans computed in the default float dtype."""

    def method(self: TensorBase[TensorT]) -> TensorT:
        return fn(_floating(self))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Elementwise ``{name}`` (PyTorch's ``Tensor.{name}``); differentiable to any order."
    return method


def _float_binary(fn: Callable[..., Any], name: str, to_float: bool = True,
                  floats_only: bool = False) -> Callable[[TensorBase[TensorT], Any], TensorT]:
    """The method ``t.<name>(other)``: ``fn`` of both, promoted to a common (floating, when ``to_float``) dtype;
    ``floats_only``: PyTorch's error when neither is floating."""

    def method(self: TensorBase[TensorT], other: Any) -> TensorT:
        a, b = _promoted(name, self, other, to_float=to_float, floats_only=floats_only)
        return fn(a, b)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Elementwise ``{name}`` (PyTorch's ``Tensor.{name}``), broadcasting; differentiable."
    return method


def _integer_binary(fn: Callable[..., Any], name: str,
                    kernel: str | None = None) -> Callable[[TensorBase[TensorT], Any], TensorT]:
    """The method ``t.<name>(other)`` on integer tensors (no gradient): floats and bools are refused, as in
    PyTorch (whose error names its kernel, ``kernel``)."""

    def method(self: TensorBase[TensorT], other: Any) -> TensorT:
        a, b = _promoted(name, self, other)
        kind = (a if is_tensor(a) else b)._value.dtype.kind
        if kind not in "iu":
            dt = (a if is_tensor(a) else b).dtype
            raise NotImplementedError(f'"{kernel or name}_cpu" not implemented for \'{_dt.SCALAR_NAMES[dt]}\'')
        return fn(a, b)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Elementwise ``{name}`` of integer tensors (PyTorch's ``Tensor.{name}``); no gradient."
    return method


class _SpecialMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ unary functions on floats
    acosh, asinh, atanh, erf, erfc, erfinv, digamma, lgamma, i0, sinc, deg2rad, rad2deg = (
        _float_unary(f, n) for f, n in (
            (fnp.arccosh, "acosh"), (fnp.arcsinh, "asinh"), (fnp.arctanh, "atanh"), (fsp.erf, "erf"),
            (fsp.erfc, "erfc"), (fsp.erfinv, "erfinv"), (fsp.digamma, "digamma"), (fsp.gammaln, "lgamma"),
            (fsp.i0, "i0"), (fnp.sinc, "sinc"), (fnp.deg2rad, "deg2rad"), (fnp.rad2deg, "rad2deg")))
    arccosh, arcsinh, arctanh = acosh, asinh, atanh

    def polygamma(self: TensorT, n: builtins.int) -> "TensorT":
        """The ``n``-th derivative of ``digamma`` (``polygamma(0, x)`` is ``digamma``). Example:
        ``ft.tensor([1.0]).polygamma(1)  # pi^2 / 6``."""
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        x = _floating(self)
        return fsp.digamma(x) if n == 0 else fsp.polygamma(n, x)

    def mvlgamma(self: TensorT, p: builtins.int) -> "TensorT":
        """The log of the multivariate gamma function of dimension ``p``. Example: ``ft.tensor([2.5]).mvlgamma(2)``."""
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
        # sum_j lgamma(x - j/2) + p(p-1)/4 log(pi), as PyTorch (no domain check: lgamma's values outside it)
        x = _floating(self)
        out = fsp.gammaln(x)
        for j in builtins.range(1, p):
            out = out + fsp.gammaln(x - j / 2)
        return out + p * (p - 1) / 4 * math.log(math.pi)

    def logit(self: TensorT, eps: builtins.float | None = None) -> "TensorT":
        """``log(x / (1 - x))``; with ``eps``, ``x`` is first clamped to ``[eps, 1 - eps]`` (zero gradient outside).
        Example: ``ft.tensor([0.25]).logit()  # log(1/3)``."""
        x = _floating(self)
        if eps is not None:  # (the gradient passes at the bounds themselves, as PyTorch's)
            x = fnp.where(x < eps, eps, fnp.where(x > 1.0 - eps, 1.0 - eps, x))
        return fsp.logit(x)

    def nan_to_num(self: TensorT, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                   neginf: builtins.float | None = None) -> "TensorT":
        """NaN to ``nan``, infinities to ``posinf``/``neginf`` (default: the dtype's largest and smallest finite
        values). Example: ``ft.tensor([float('nan'), float('inf')]).nan_to_num()``."""
        if self._value.dtype.kind not in "fc":
            return self.clone()
        return fnp.nan_to_num(self, nan=nan, posinf=posinf, neginf=neginf)

    def positive(self: TensorT) -> "TensorT":
        """``self`` (``+x``); refused for bool tensors, as in PyTorch."""
        if self._value.dtype.kind == "b":
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def fix(self: TensorT) -> "TensorT":
        """``trunc``: rounding towards zero."""
        return self.trunc()

    def frexp(self: TensorT) -> Any:
        """``(mantissa, exponent)`` with ``self = mantissa * 2 ** exponent``, ``0.5 <= |mantissa| < 1`` and an int32
        exponent; the mantissa is differentiable. Example: ``ft.tensor([8.0]).frexp()  # (0.5, 4)``."""
        if self._value.dtype.kind not in "f":
            raise RuntimeError("torch.frexp() only supports floating-point dtypes")
        mantissa, exponent = fnp.frexp(self)
        return Frexp(mantissa, exponent)

    # ------------------------------------------------------------------ binary functions
    hypot, logaddexp, logaddexp2, nextafter = (
        _float_binary(f, n, floats_only=True) for f, n in (
            (fnp.hypot, "hypot"), (fnp.logaddexp, "logaddexp"), (fnp.logaddexp2, "logaddexp2"),
            (fnp.nextafter, "nextafter")))
    copysign = _float_binary(fnp.copysign, "copysign")
    fmax, fmin = _float_binary(fnp.fmax, "fmax", to_float=False), _float_binary(fnp.fmin, "fmin", to_float=False)
    xlogy = _float_binary(fsp.xlogy, "xlogy")

    def igamma(self: TensorT, other: Any) -> "TensorT":
        """The regularized lower incomplete gamma function ``P(self, other)`` (``scipy.special.gammainc``).
        Unlike PyTorch, the derivative in ``self`` is given too."""
        a, x = _promoted("igamma", self, other, to_float=True, floats_only=True)
        return fsp.gammainc(a, x)

    def igammac(self: TensorT, other: Any) -> "TensorT":
        """The regularized upper incomplete gamma function ``Q(self, other) = 1 - P(self, other)``."""
        a, x = _promoted("igammac", self, other, to_float=True, floats_only=True)
        return fsp.gammaincc(a, x)

    def heaviside(self: TensorT, values: Any) -> "TensorT":
        """0 where ``self < 0``, ``values`` where ``self == 0``, 1 where ``self > 0``; no gradient. Both must
        have one dtype, as in PyTorch."""
        if not is_tensor(values):
            raise TypeError(f"heaviside(): argument 'values' must be Tensor, not {type(values).__name__}")
        if values.dtype != self.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
        return fnp.heaviside(self.detach(), values.detach()).to(self.dtype)

    def ldexp(self: TensorT, other: Any) -> "TensorT":
        """``self * 2 ** other`` (floating result); differentiable in both."""
        return _floating(self) * (2.0 ** _operand("ldexp", other))

    def float_power_(self: TensorT, exponent: Any) -> "TensorT":
        """In-place ``float_power``: ``self`` must be float64 (complex128), as the result is."""
        if self._value.dtype.kind not in "fc" or self._value.dtype.itemsize < (16 if self.is_complex() else 8):
            raise RuntimeError(f"the base given to float_power_ has dtype {_scalar_name(self)} but the operation's "
                               f"result requires dtype {'ComplexDouble' if self.is_complex() else 'Double'}")
        return self._inplace(type(self).float_power, exponent)

    gcd, lcm = _integer_binary(fnp.gcd, "gcd"), _integer_binary(fnp.lcm, "lcm")
    bitwise_left_shift = __lshift__ = _integer_binary(fnp.left_shift, "bitwise_left_shift", "lshift")
    bitwise_right_shift = __rshift__ = _integer_binary(fnp.right_shift, "bitwise_right_shift", "rshift")

    def _bitwise(self: TensorT, op: str, other: Any) -> "TensorT":
        if self._value.dtype.kind not in "biu" or (is_tensor(other) and other._value.dtype.kind not in "biu") \
                or isinstance(other, builtins.float):
            bad = self if self._value.dtype.kind not in "biu" else other
            name = _scalar_name(bad) if is_tensor(bad) else "Float"
            raise NotImplementedError(f'"{op}_cpu" not implemented for \'{name}\'')
        a, b = _promoted(op, self, other)
        both_bool = a._value.dtype.kind == "b"  # (the promoted dtype: bool only when both are)
        return getattr(fnp, "logical" + op[len("bitwise"):] if both_bool else op)(a, b)

    def bitwise_and(self: TensorT, other: Any) -> "TensorT":
        """Elementwise AND of integer or bool tensors (``&``)."""
        return self._bitwise("bitwise_and", other)

    def bitwise_or(self: TensorT, other: Any) -> "TensorT":
        """Elementwise OR of integer or bool tensors (``|``)."""
        return self._bitwise("bitwise_or", other)

    def bitwise_xor(self: TensorT, other: Any) -> "TensorT":
        """Elementwise XOR of integer or bool tensors (``^``)."""
        return self._bitwise("bitwise_xor", other)

    def bitwise_not(self: TensorT) -> "TensorT":
        """Elementwise NOT of an integer or bool tensor (``~``)."""
        if self._value.dtype.kind not in "biu":
            raise NotImplementedError(f'"bitwise_not_cpu" not implemented for \'{_scalar_name(self)}\'')
        return ~self

    def hardshrink(self: TensorT, lambd: builtins.float = 0.5) -> "TensorT":
        """``x`` where ``|x| > lambd``, else 0."""
        return fnp.where(self.abs() > lambd, self, 0.0)

    def prelu(self: TensorT, weight: Any) -> "TensorT":
        """``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one element or one per channel (dim 1)."""
        w = weight
        if w.numel() > 1:
            channels = self.shape[1] if self.dim() >= 2 else self.shape[0] if self.dim() else 1
            if w.numel() != channels:
                raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                                   f"{w.numel()} and channel size = {channels}.")
            if self.dim() >= 2:
                w = w.reshape((channels,) + (1,) * (self.dim() - 2))
        return fnp.where(self > 0, self, w * self)

    # ------------------------------------------------------------------ in-place forms
    (acosh_, asinh_, atanh_, arccosh_, arcsinh_, arctanh_, erf_, erfc_, erfinv_, digamma_, lgamma_, i0_, sinc_,
     deg2rad_, rad2deg_, polygamma_, mvlgamma_, logit_, nan_to_num_, fix_, hypot_, copysign_, nextafter_, xlogy_,
     igamma_, igammac_, heaviside_, ldexp_, gcd_, lcm_, bitwise_and_, bitwise_or_, bitwise_xor_, bitwise_not_,
     bitwise_left_shift_, bitwise_right_shift_) = (
        inplace_variant(n) for n in (
            "acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "erf", "erfc", "erfinv", "digamma",
            "lgamma", "i0", "sinc", "deg2rad", "rad2deg", "polygamma", "mvlgamma", "logit", "nan_to_num", "fix",
            "hypot", "copysign", "nextafter", "xlogy", "igamma", "igammac", "heaviside", "ldexp", "gcd", "lcm",
            "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift"))
    __ilshift__, __irshift__ = bitwise_left_shift_, bitwise_right_shift_
    # the in-place forms of the elementwise methods of _tensor_math
    (absolute_, acos_, arccos_, asin_, arcsin_, atan_, arctan_, atan2_, arctan2_, ceil_, cosh_, sinh_, tan_, exp2_,
     expm1_, floor_, frac_, log10_, log1p_, log2_, negative_, round_, rsqrt_, sgn_, sign_, trunc_, divide_,
     multiply_, subtract_, true_divide_, floor_divide_, fmod_, remainder_, eq_, ne_, lt_, le_, gt_, ge_, greater_,
     greater_equal_, less_, less_equal_, not_equal_, logical_and_, logical_or_, logical_xor_, logical_not_) = (
        inplace_variant(n) for n in (
            "absolute", "acos", "arccos", "asin", "arcsin", "atan", "arctan", "atan2", "arctan2", "ceil", "cosh",
            "sinh", "tan", "exp2", "expm1", "floor", "frac", "log10", "log1p", "log2", "negative", "round", "rsqrt",
            "sgn", "sign", "trunc", "divide", "multiply", "subtract", "true_divide", "floor_divide", "fmod",
            "remainder", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
            "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not"))
    conj_physical_ = inplace_variant("conj_physical")

