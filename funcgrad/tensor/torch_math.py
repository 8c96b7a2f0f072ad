"""The maths functions of the torch namespace beyond ``ops.py``: ``ft.erf``, ``ft.lgamma``, ``ft.hypot``,
``ft.cummax``, ``ft.quantile``, ``ft.cov``, ... (each the Tensor method of the same name, called on the first
argument), the module-level in-place forms (``ft.exp_(x)``), and the functions that are not methods:
``polygamma(n, input)``, ``xlogy`` of a number, ``rsub``, ``gradient``, ``trapezoid``/``trapz``,
``cumulative_trapezoid`` and the window functions.

Example::

    x = ft.linspace(0, 1, 5, requires_grad=True)
    ft.trapezoid(x ** 2, x)                 # 0.34375 (the trapezoid rule on [0, 1])
    ft.hann_window(4)                       # tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from __future__ import annotations

import builtins
import math
from typing import Any, cast

import numpy as np

import funcgrad.numpy as fnp

from . import dtypes as _dt
from .creation import _finish, _np_dtype
from .ops import _method_fn, cat, stack
from ._tensor_math import keep_alpha
from .tensor import Tensor
from .tensor import _as_tensor
from .tensor_helpers import _wrap_dim

# ``ft.<name>(input, ...)`` is ``input.<name>(...)``, for these (spelled out for type checkers and readers)
_METHODS = [
    "acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "erf", "erfc", "erfinv", "digamma", "lgamma", "i0",
    "sinc", "deg2rad", "rad2deg", "mvlgamma", "logit", "nan_to_num", "positive", "fix", "frexp", "hypot",
    "logaddexp", "logaddexp2", "copysign", "fmax", "fmin", "nextafter", "igamma", "igammac", "heaviside", "ldexp",
    "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "aminmax", "cummax", "cummin", "logcumsumexp", "kthvalue", "msort", "mode", "nanmedian",
    "nanmean", "quantile", "nanquantile", "histc", "histogram", "cov", "corrcoef", "dist", "diff", "renorm", "stft",
    "istft",
]
# ``ft.<name>_(input, ...)``: the in-place method, as ``torch.exp_``
_INPLACE = [
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_", "asinh_",
    "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_",
    "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_",
    "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_",
    "conj_physical_",
]
__all__ = _METHODS + _INPLACE + [
    "polygamma", "xlogy", "rsub", "vander", "gradient", "trapezoid", "trapz", "cumulative_trapezoid", "hann_window",
    "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
]

(
    acosh, asinh, atanh, arccosh, arcsinh, arctanh, erf, erfc, erfinv, digamma, lgamma, i0, sinc, deg2rad, rad2deg,
    mvlgamma, logit, nan_to_num, positive, fix, frexp, hypot, logaddexp, logaddexp2, copysign, fmax, fmin, nextafter,
    igamma, igammac, heaviside, ldexp, gcd, lcm, bitwise_and, bitwise_or, bitwise_xor, bitwise_not,
    bitwise_left_shift, bitwise_right_shift, aminmax, cummax, cummin, logcumsumexp, kthvalue, msort, mode, nanmedian,
    nanmean, quantile, nanquantile, histc, histogram, cov, corrcoef, dist, diff, renorm, stft, istft,
) = map(_method_fn, _METHODS)
(
    abs_, acos_, acosh_, arccos_, arccosh_, arcsin_, arcsinh_, arctan_, arctanh_, asin_, asinh_, atan_, atanh_,
    ceil_, clamp_, clamp_max_, clamp_min_, clip_, cos_, cosh_, deg2rad_, erf_, erfc_, exp2_, exp_, expm1_, fix_,
    floor_, frac_, gcd_, i0_, lcm_, ldexp_, log10_, log1p_, log2_, log_, logit_, nan_to_num_, neg_, negative_,
    rad2deg_, reciprocal_, round_, rsqrt_, sigmoid_, sin_, sinc_, sinh_, sqrt_, square_, tan_, tanh_, trunc_,
    xlogy_, conj_physical_,
) = map(_method_fn, _INPLACE)


def polygamma(n: int, input: Any) -> Tensor:  # noqa: A002
    """The ``n``-th derivative of ``digamma`` at ``input`` (``torch.polygamma(n, input)``: ``n`` first).

    Example: ``ft.polygamma(1, ft.tensor([1.0]))  # pi^2 / 6``.
    """
    return _as_tensor(input).polygamma(n)


def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log(other)``, 0 where ``input`` is 0 (also when ``other`` is 0); ``input`` may be a number.

    Example: ``ft.xlogy(ft.tensor([0.0, 2.0]), ft.tensor([0.0, 3.0]))  # [0, 2 log 3]``.
    """
    if isinstance(input, Tensor):
        return input.xlogy(other)
    return _as_tensor(input).to(_dt.result_type(input, _as_tensor(other))).xlogy(other)


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``other - alpha * input``. Example: ``ft.rsub(ft.tensor([1.0]), 3.0)  # [2.]``."""
    x = _as_tensor(input)
    return cast(Tensor, x.__rsub__(other) if alpha == 1 else keep_alpha((x * alpha).__rsub__(other), alpha))


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** (N-1), ..., x, 1`` (ascending powers when
    ``increasing``); ``N`` defaults to ``len(x)``; bools count as int64. Differentiable in ``x``.

    Example: ``ft.vander(ft.tensor([1, 2, 3]))  # [[1, 1, 1], [4, 2, 1], [9, 3, 1]]``.
    """
    t = _as_tensor(x)
    if t.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = t.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if t._value.dtype.kind == "b":
        t = t.long()
    if n == 0:
        return t.unsqueeze(1)[:, :0]
    columns = [t * 0 + 1]
    for _ in range(n - 1):
        columns.append(columns[-1] * t)
    if not increasing:
        columns.reverse()
    return stack(columns, 1)


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,  # noqa: A002
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """Derivative estimates along each of ``dim`` (all dims when None) by central differences inside and
    one-sided ones (of order ``edge_order``) at the edges, as ``numpy.gradient``: one tensor per dim.
    ``spacing`` is one number, one number per dim, or one coordinate tensor per dim. Differentiable.

    Example: ``ft.gradient(ft.tensor([1.0, 4.0, 9.0]))  # (tensor([3., 4., 5.]),)``.
    """
    x = _as_tensor(input)
    if x._value.dtype.kind in "biu":
        x = x.to(_dt.get_default_dtype())
    dims = tuple(range(x.dim())) if dim is None else (
        tuple(_wrap_dim(d, x.dim()) for d in dim) if isinstance(dim, (list, tuple)) else (_wrap_dim(dim, x.dim()),))
    for d in dims:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if edge_order not in (1, 2):
        raise ValueError(f"torch.gradient only supports edge_order=1 and edge_order=2.")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        steps = [s if isinstance(s, Tensor) else builtins.float(s) for s in spacing]
    else:
        steps = [builtins.float(spacing)] * len(dims)
    out = []
    for step, d in zip(steps, dims):
        if isinstance(step, Tensor):
            out.append(_nonuniform_gradient(x, step, d, edge_order))
        else:
            out.append(_as_tensor(fnp.gradient(x, step, axis=d, edge_order=edge_order)))
    return tuple(out)


def _nonuniform_gradient(f: Tensor, coordinates: Tensor, d: int, edge_order: int) -> Tensor:
    """``numpy.gradient``'s second-order differences for sample points ``coordinates`` along dim ``d``
    (one-sided ones of ``edge_order`` at the two ends)."""
    n = f.shape[d]
    if coordinates.dim() != 1 or coordinates.shape[0] != n:
        raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and to have as many "
                           f"elements as the input's dimension {d} ({n}), but got {list(coordinates.shape)}")
    shape = [-1 if i == d else 1 for i in range(f.dim())]
    h = coordinates.to(f.dtype).diff()

    def at(t: Tensor, start: int, length: int) -> Tensor:
        return t.narrow(d, start, length) if t.dim() == f.dim() else t.narrow(0, start, length).reshape(shape)

    h1, h2 = at(h, 0, n - 2), at(h, 1, n - 2)  # the steps before and after each inner point
    inner = (-h2 / (h1 * (h1 + h2)) * at(f, 0, n - 2) + (h2 - h1) / (h1 * h2) * at(f, 1, n - 2)
             + h1 / (h2 * (h1 + h2)) * at(f, 2, n - 2))
    if edge_order == 1:
        first = (at(f, 1, 1) - at(f, 0, 1)) / at(h, 0, 1)
        last = (at(f, n - 1, 1) - at(f, n - 2, 1)) / at(h, n - 2, 1)
    else:
        a1, a2 = at(h, 0, 1), at(h, 1, 1)
        first = (-(2 * a1 + a2) / (a1 * (a1 + a2)) * at(f, 0, 1) + (a1 + a2) / (a1 * a2) * at(f, 1, 1)
                 - a1 / (a2 * (a1 + a2)) * at(f, 2, 1))
        b1, b2 = at(h, n - 3, 1), at(h, n - 2, 1)
        last = (b2 / (b1 * (b1 + b2)) * at(f, n - 3, 1) - (b1 + b2) / (b1 * b2) * at(f, n - 2, 1)
                + (2 * b2 + b1) / (b2 * (b1 + b2)) * at(f, n - 1, 1))
    return cat([first, inner, last], d)


def _intervals(y: Tensor, x: Any, dx: Any, dim: int) -> tuple[Tensor, Any]:
    """The trapezoids' heights' sums ``y[i] + y[i+1]`` along ``dim`` and their widths (a number or a tensor)."""
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    pairs = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1) if n else y
    if x is None:
        return pairs, 1.0 if dx is None else dx
    xt = _as_tensor(x)
    if xt.dim() == 1:
        if xt.shape[0] != n:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point")
        widths = xt.diff().reshape([-1 if i == d else 1 for i in range(y.dim())])
    else:
        widths = xt.diff(dim=dim)
    return pairs, widths


def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoid rule along ``dim``: with sample points ``x`` (1-D, or shaped as ``y``) or a spacing ``dx``
    (default 1). Differentiable in ``y`` and ``x``. Example: ``ft.trapezoid(ft.tensor([1.0, 2.0, 3.0]))  # 4.``."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx")
    yt = _as_tensor(y)
    if yt._value.dtype.kind in "biu":
        yt = yt.to(_dt.get_default_dtype())
    pairs, widths = _intervals(yt, x, dx, dim)
    return cast(Tensor, (pairs * widths).sum(dim) / 2)


def trapz(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """``trapezoid`` (PyTorch's older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoid rule along ``dim`` (one fewer element than ``y`` there). Example:
    ``ft.cumulative_trapezoid(ft.tensor([1.0, 2.0, 3.0]))  # [1.5, 4.]``."""
    yt = _as_tensor(y)
    if yt._value.dtype.kind in "biu":
        yt = yt.to(_dt.get_default_dtype())
    pairs, widths = _intervals(yt, x, dx, dim)
    return cast(Tensor, (pairs * widths).cumsum(dim) / 2)


# --------------------------------------------------------------------------
# window functions


def _window(name: str, window_length: int, periodic: bool, dtype: Any, device: Any, requires_grad: bool,
            values: Any) -> Tensor:
    """A window of ``window_length`` points: ``values(N)`` (float64, symmetric, N points) at
    ``N = window_length + 1`` with the last point dropped when ``periodic``."""
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    d = _np_dtype(dtype)
    if d.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_dt.from_numpy_dtype(d)}")
    if window_length <= 1:
        w = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        w = values(n)[:window_length]
    return _finish(np.asarray(w, dtype=d), dtype, device, requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                device: Any = None, requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / (N - 1))``, periodic by default (for spectral analysis, ``N = length + 1``).

    Example: ``ft.hann_window(4)  # [0, 0.5, 1, 0.5]``.
    """
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, np.hanning)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi n / (N - 1))``. Example: ``ft.hamming_window(4)``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: alpha - beta * np.cos(2 * math.pi * np.arange(n) / (n - 1)))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``. Example: ``ft.blackman_window(4)``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, np.blackman)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2n / (N - 1) - 1|``. Example: ``ft.bartlett_window(5)``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, np.bartlett)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)``. Example: ``ft.kaiser_window(5, beta=8.0)``."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: np.kaiser(n, beta))

