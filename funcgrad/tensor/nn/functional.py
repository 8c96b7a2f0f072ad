"""``ft.nn.functional`` (``import funcgrad.tensor.nn.functional as F``): PyTorch's functional layer.

The formulas are ``funcgrad.nn``'s (convolution, pooling, normalization,
recurrent cells, losses) applied to the tensors as recorded NumPy-semantics
boxes, or short compositions of Tensor operations where ``funcgrad.nn`` has no
counterpart; either way gradients come from the one engine.

Example::

    import funcgrad.tensor.nn.functional as F
    y = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2)
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import warnings
from typing import Any, Callable, Sequence, TypeVar, cast

import numpy as np

import funcgrad.nn as _fnn
from funcgrad.nn.kernels.convolution import conv_input_grad
from funcgrad.nn.kernels.dense import dense
from funcgrad.nn.kernels.pooling import window_argmax, window_gather, window_sum
from funcgrad.nn.kernels.layer_norm import layer_norm_affine
from funcgrad.nn.kernels.running_statistics import blend_running_statistics, blend_running_statistics_into
import funcgrad.numpy as fnp
from funcgrad.backend import namespace_of, to_numpy
from funcgrad.core import Box
from funcgrad.transforms import stop_gradient

from .. import dtypes as _dt
from .._func_support import is_traced as _func_traced
from ..creation import default_generator
from ..grad_mode import no_grad
from .. import ops as _ops
from ..boxes import as_tensor_box as _as_tensor_box
from ..tensor import Tensor
from ..tensor_helpers import _as_tensor, _raw, named_result
from ..torch_names import named
from ._reduction import _check_reduction, _legacy_reduction, _reduce
from .bridge import _boxes, _check_dropout_p, _dropout, _run_on_tensors, _run_on_tensors_named, _like, _maybe_inplace, _renorm_rows_


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.relu_() if inplace else x.relu()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    return _run_on_tensors_named("GeluBackward0", _fnn.gelu, x, approximate=(approximate == "tanh"))


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    return _run_on_tensors(_fnn.silu, x)


def _softplus(x: Tensor, beta: float = 1.0) -> Tensor:
    """``funcgrad.nn.softplus(beta x) / beta``, without PyTorch's linear ``threshold`` (see :func:`softplus`)."""
    if beta != 1.0:
        return _run_on_tensors(_fnn.softplus, x * beta) / beta
    return _run_on_tensors(_fnn.softplus, x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _where(x > 0, x, x * negative_slope)


def softmax(x: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    return x.softmax(-1 if dim is None else dim, dtype)


def log_softmax(x: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    return x.log_softmax(-1 if dim is None else dim, dtype)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``. Example: ``F.linear(x, w, b)``.

    One recorded node (``funcgrad.nn.kernels.dense``) for a real floating ``x`` of at least two axes
    whose last matches the matrix ``weight`` in size and dtype (as the bias); otherwise the product and
    the sum, whose errors are PyTorch's.
    """
    xv, wv = x._value, weight._value
    if wv.ndim == 2 and xv.ndim >= 2 and xv.shape[-1] == wv.shape[1]:
        d = x.dtype
        if weight.dtype is d and d.is_floating_point and not d.is_complex \
                and (bias is None or isinstance(bias, Tensor) and bias.dtype is d and bias._value.ndim <= 1):
            dense_named = _DENSE_NAMED[(bias is not None) if xv.ndim == 2 else None]
            return cast("Tensor", dense_named(x, weight, bias))  # (one primitive: no bridge boxes needed)
    out = x.matmul(weight.t())
    return out + bias if bias is not None else out


# F.linear's one node, named as PyTorch's: a matrix with bias (True), without (False), a stack of rows (None)
_DENSE_NAMED = {True: named("AddmmBackward0", dense), False: named("MmBackward0", dense), None: named("ViewBackward0", dense)}


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _run_on_tensors_named("MseLossBackward0", _fnn.mse_loss, input, _as_tensor(target), reduction=reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
            reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _run_on_tensors_named("L1LossBackward0", _fnn.l1_loss, input, _as_tensor(target), reduction=reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:  # noqa: A002
    _check_reduction(reduction)
    return _run_on_tensors(_fnn.huber_loss, input, _as_tensor(target), delta=delta, reduction=reduction)


def _cross_entropy_ignoring(input: Tensor, labels: Any, axis: int, label_smoothing: float, reduction: str,  # noqa: A002
                            ignore_index: int) -> Tensor:
    """cross_entropy with the entries ``labels == ignore_index`` left out, without a host sync."""
    xp = namespace_of(labels)
    keep = labels != ignore_index
    safe = xp.where(keep, labels, 0)
    def loss() -> Tensor:
        per = _run_on_tensors(_fnn.cross_entropy, input, safe, axis=axis, label_smoothing=label_smoothing, reduction="none")
        w = Tensor._make(keep.astype(per._value.dtype))
        return _reduce(per * w, reduction, w)

    return cast("Tensor", named_result("NllLossBackward0", loss)())


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of logits, computed stably; ``weight`` scales each element's loss (broadcast)
    before the reduction, ``pos_weight`` the positive term. Example: ``F.binary_cross_entropy_with_logits(z, t)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if weight is not None:
        return _reduce(binary_cross_entropy_with_logits(input, target, reduction="none", pos_weight=pos_weight)
                       * weight, reduction)
    return _run_on_tensors_named("BinaryCrossEntropyWithLogitsBackward0", _fnn.binary_cross_entropy_with_logits, input,
                     _as_tensor(target), pos_weight=pos_weight, reduction=reduction)


def _ntuple(v: Any, n: int) -> tuple[Any, ...]:
    return (int(v),) * n if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)


def _where(cond: Any, a: Any, b: Any) -> Tensor:
    return cast("Tensor", _ops.where(cond, a, b))


def _const(t: Tensor, value: Any) -> Tensor:
    return _like(t, np.asarray(value, dtype=t._value.dtype))


_T = TypeVar("_T")
_AXES = {1: "the last axis", 2: "the last two axes", 3: "the last three axes"}


def _per_rank(impl: Callable[..., _T], name: str, doc: str,
              ranks: tuple[int, ...] = (1, 2, 3)) -> tuple[Callable[..., _T], ...]:
    """The public forms of ``impl`` per rank (``max_pool1d``, ``max_pool2d``, ``max_pool3d``): ``impl`` takes
    their arguments and, by keyword, the number of spatial axes ``nsp``; ``name`` and ``doc`` are formatted
    with ``n`` and ``axes``."""

    sig = inspect.signature(impl)
    public = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != "nsp"])

    def form(n: int) -> Callable[..., _T]:
        @functools.wraps(impl)
        def f(*args: Any, **kwargs: Any) -> _T:
            return impl(*args, nsp=n, **kwargs)

        f.__name__ = f.__qualname__ = name.format(n=n)
        f.__doc__ = doc.format(n=n, axes=_AXES[n])
        setattr(f, "__signature__", public)  # the public arguments, without nsp
        return f

    return tuple(form(n) for n in ranks)


# --------------------------------------------------------------------------- activations


def _honour_inplace(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``inplace=True`` (by keyword or position) writes ``fn``'s result into its input and returns
    the input, as PyTorch's in-place activations and dropouts do (checked as any in-place change:
    a leaf that requires grad refuses)."""
    names = list(inspect.signature(fn).parameters)
    at = names.index("inplace")

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inplace = kwargs.get("inplace", args[at] if len(args) > at else False)
        if args:
            return _maybe_inplace(args[0], lambda t: fn(t, *args[1:], **kwargs), inplace)
        x = kwargs.pop(names[0])
        return _maybe_inplace(x, lambda t: fn(t, **kwargs), inplace)

    return wrapper



def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``. Example: ``F.relu6(x)``."""
    return x.clamp(0.0, 6.0)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``clamp(x, min_val, max_val)``. Example: ``F.hardtanh(x)``."""
    return x.clamp(min_val, max_val)


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` if positive else ``alpha * (exp(x) - 1)`` (``funcgrad.nn.elu``). Example: ``F.elu(x)``."""
    return _run_on_tensors(_fnn.elu, x, alpha=alpha)


def selu(x: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU with PyTorch's constants. Example: ``F.selu(x)``."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return elu(x, alpha) * scale


def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``. Example: ``F.celu(x)``."""
    return elu(x / alpha) * alpha


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (as PyTorch). Example: ``F.softplus(x)``."""
    return _where(x * beta > threshold, x, _softplus(x, beta))


def softsign(x: Tensor) -> Tensor:
    """``x / (1 + |x|)``. Example: ``F.softsign(x)``."""
    return x / (x.abs() + 1.0)


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``. Example: ``F.mish(x)``."""
    return x * _softplus(x).tanh()


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """``clamp(x / 6 + 1/2, 0, 1)``. Example: ``F.hardsigmoid(x)``."""
    return (x / 6.0 + 0.5).clamp(0.0, 1.0)


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """``x * hardsigmoid(x)``. Example: ``F.hardswish(x)``."""
    return x * hardsigmoid(x)


def logsigmoid(x: Tensor) -> Tensor:
    """``log(sigmoid(x))``, stable (``funcgrad.nn.log_sigmoid``). Example: ``F.logsigmoid(x)``."""
    return _run_on_tensors(_fnn.log_sigmoid, x)


def tanhshrink(x: Tensor) -> Tensor:
    """``x - tanh(x)``. Example: ``F.tanhshrink(x)``."""
    return x - x.tanh()


def softmin(x: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """``softmax(-x)``. Example: ``F.softmin(x, dim=1)``."""
    return softmax(-x, dim, dtype)


def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > threshold`` else ``value``. Example: ``F.threshold(x, 0.1, 0.0)``."""
    return _where(x > threshold, x, _const(x, value))


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half times the sigmoid of the second. Example: ``F.glu(x)``."""
    a, b = x.chunk(2, dim)
    return cast("Tensor", a * b.sigmoid())


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """``x`` if positive else ``weight * x`` (weight per channel, dim 1). Example: ``F.prelu(x, w)``."""
    w = weight
    if x.dim() > 1 and weight.numel() > 1:
        w = weight.reshape((-1,) + (1,) * (x.dim() - 2))
    return _where(x > 0, x, x * w)


# --------------------------------------------------------------------------- dropout


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero elements with probability ``p`` (scaled by ``1/(1-p)``) in training. Example: ``F.dropout(x, 0.2)``."""
    return _dropout(x, p, training, tuple(x.shape))


def _channel_dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
                     nsp: int) -> Tensor:
    _check_dropout_p(p)
    if x.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"dropout{nsp}d: Expected {nsp + 1}D or {nsp + 2}D input, but received a {x.dim()}D input")
    return _dropout(x, p, training, tuple(x.shape[:-nsp]) + (1,) * nsp)


dropout1d, dropout2d, dropout3d = _per_rank(
    _channel_dropout, "dropout{n}d", "Zero whole channels (the dims before {axes}). Example: ``F.dropout{n}d(x, 0.5)``.")


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's mean and variance (dropped units take SELU's negative saturation).

    Example: ``F.alpha_dropout(x, 0.2, training=True)``.
    """
    _check_dropout_p(p)
    if not training or p == 0.0:
        return x
    alpha_p = -1.7580993408473766
    keep = (default_generator._rng.random(tuple(x.shape)) >= p).astype(x._value.dtype)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    return cast("Tensor", (x * _like(x, keep) + _like(x, (1 - keep) * alpha_p)) * a + b)


# --------------------------------------------------------------------------- convolution


def _conv(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
          dilation: Any = 1, groups: int = 1, *, nsp: int) -> Tensor:
    fn = (_fnn.conv1d, _fnn.conv2d, _fnn.conv3d)[nsp - 1]
    if x.dim() == nsp + 2 and (bias is None or bias.dtype is x.dtype is weight.dtype):
        # (batched, one dtype: fg.nn's conv is its checks, the conv_forward primitive and a bias added with `+`,
        # which a Tensor adds as NumPy does: it takes the Tensors as they are, no bridge boxes)
        return cast("Tensor", fn(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups))
    return _run_on_tensors(fn, x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)


conv1d, conv2d, conv3d = _per_rank(
    _conv, "conv{n}d", "{n}-d cross-correlation over {axes} of ``(N, C, *spatial)`` with ``weight (O, C/groups, "
    "*kernel)`` (``funcgrad.nn.conv{n}d``). Example: ``F.conv{n}d(x, w, b, padding=1)``.")


def _conv_transpose_raw(x: Any, weight: Any, bias: Any, stride: tuple[Any, ...], padding: tuple[Any, ...],
                        output_padding: tuple[Any, ...],
                        groups: int, dilation: tuple[Any, ...]) -> Any:
    # The adjoint of the convolution in its input: funcgrad.nn's conv_input_grad kernel (one GEMM + col2im).
    nsp = len(stride)
    shape = fnp.shape(x)
    unbatched = len(shape) == nsp + 1
    if unbatched:
        x = fnp.expand_dims(x, 0)
        shape = fnp.shape(x)
    wshape = fnp.shape(weight)
    c_out, kernel = wshape[1] * groups, tuple(wshape[2:])
    out = tuple((L - 1) * s - 2 * p + d * (k - 1) + 1 + op
                for L, s, p, d, k, op in zip(shape[2:], stride, padding, dilation, kernel, output_padding))
    y = conv_input_grad(x, weight, (shape[0], c_out) + out, tuple(stride), tuple((p, p) for p in padding),
                        tuple(dilation), groups)
    if bias is not None:
        y = y + fnp.reshape(bias, (c_out,) + (1,) * nsp)
    return y[0] if unbatched else y


def _conv_transpose(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                    output_padding: Any = 0, groups: int = 1, dilation: Any = 1, *, nsp: int) -> Tensor:
    if weight.dim() != nsp + 2:
        raise RuntimeError(f"conv_transpose{nsp}d: weight must have {nsp + 2} dimensions, got {tuple(weight.shape)}")
    st, pd, op, dl = (_ntuple(v, nsp) for v in (stride, padding, output_padding, dilation))
    for o, s, d in zip(op, st, dl):
        if o >= max(s, d):
            raise RuntimeError("output padding must be smaller than either stride or dilation")
    return _run_on_tensors(_conv_transpose_raw, x, weight, bias, st, pd, op, groups, dl)


conv_transpose1d, conv_transpose2d, conv_transpose3d = _per_rank(
    _conv_transpose, "conv_transpose{n}d", "Transposed {n}-d convolution, ``weight (C_in, C_out/groups, *kernel)``. "
    "Example: ``F.conv_transpose{n}d(x, w, stride=2)``.")


def unfold(x: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sliding windows of ``(N, C, H, W)`` as columns ``(N, C*kh*kw, L)`` (``funcgrad.nn.im2col``).

    Example: ``F.unfold(x, 3, padding=1)``.
    """
    k = _ntuple(kernel_size, 2)

    def raw(v: Any) -> Any:
        cols = _fnn.im2col(v, k, stride, padding, dilation)
        s = fnp.shape(cols)
        return fnp.reshape(cols, (s[0], s[1] * k[0] * k[1], -1))

    return _run_on_tensors(raw, x)


def fold(x: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sum columns ``(N, C*kh*kw, L)`` back into ``(N, C, *output_size)`` (``funcgrad.nn.col2im``).

    Example: ``F.fold(cols, (4, 4), 3, padding=1)``.
    """
    k, out = _ntuple(kernel_size, 2), _ntuple(output_size, 2)
    st, pd, dl = _ntuple(stride, 2), _ntuple(padding, 2), _ntuple(dilation, 2)
    n_out = [(o + 2 * p - d * (kk - 1) - 1) // s + 1 for o, p, d, kk, s in zip(out, pd, dl, k, st)]

    def raw(v: Any) -> Any:
        s = fnp.shape(v)
        c = s[1] // (k[0] * k[1])
        cols = fnp.reshape(v, (s[0], c) + k + tuple(n_out))
        return _fnn.col2im(cols, (s[0], c) + out, k, st, pd, dl)

    return _run_on_tensors(raw, x)


# --------------------------------------------------------------------------- pooling
# One implementation for every rank: the windows come from ``funcgrad.nn.im2col`` (padding, stride,
# dilation) or, for the adaptive pools, from per-axis index tables; the max picks PyTorch's first
# maximum (so ties send the whole gradient to one element) and the indices are flat positions in
# each input plane, as PyTorch's.


def _check_pool_rank(x: Tensor, nsp: int, name: str) -> None:
    """A pool over ``nsp`` spatial axes takes ``(C, *spatial)`` or ``(N, C, *spatial)``."""
    if x.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{name}: expected a {nsp + 1}-d or {nsp + 2}-d input, got shape {tuple(x.shape)}")


def _pool_args(x: Tensor, nsp: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               name: str) -> tuple[Any, ...]:
    _check_pool_rank(x, nsp, name)
    k = _ntuple(kernel_size, nsp)
    empty = stride is None or (not isinstance(stride, (int, np.integer)) and len(stride) == 0)
    s = k if empty else _ntuple(stride, nsp)
    p, d = _ntuple(padding, nsp), _ntuple(dilation, nsp)
    for tup, what in ((k, "kernel_size"), (s, "stride"), (d, "dilation")):
        if len(tup) != nsp or any(v <= 0 for v in tup):
            raise RuntimeError(f"{name}: {what} must be {nsp} positive ints, got {tup}")
    if len(p) != nsp or any(v < 0 or v > kk // 2 for v, kk in zip(p, k)):
        raise RuntimeError(f"{name}: padding must be non-negative and at most half the kernel size, "
                           f"got padding {p} for kernel {k}")
    return k, s, p, d


def _pool_out(sizes: tuple[Any, ...], k: tuple[Any, ...], s: tuple[Any, ...], p: tuple[Any, ...], d: tuple[Any, ...], ceil_mode: bool, name: str) -> tuple[Any, ...]:
    """PyTorch's output sizes, and the right padding that covers the last window."""
    out, hi = [], []
    for n, kk, ss, pp, dd in zip(sizes, k, s, p, d):
        span = n + 2 * pp - dd * (kk - 1) - 1
        o = (-(-span // ss) if ceil_mode else span // ss) + 1
        if ceil_mode and (o - 1) * ss >= n + pp:  # the last window must start inside the input or left padding
            o -= 1
        if span < 0 or o <= 0:
            raise RuntimeError(f"{name}: the window (kernel {k}, dilation {d}) does not fit the padded input "
                               f"{sizes} with padding {p}: output size would be {o}")
        out.append(o)
        hi.append(max((o - 1) * ss + dd * (kk - 1) + 1 - n - pp, 0))
    return tuple(out), tuple(hi)


def _arange_along(t: Tensor, n: int, j: int, nsp: int) -> Tensor:
    """``arange(n)`` shaped to broadcast along spatial axis ``j`` of an ``(*lead, *out)`` tensor."""
    return _like(t, np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (nsp - 1 - j)))


def _argmax_pick(cols: Tensor, nsp: int, kernel: tuple[Any, ...], position: Callable[[int, Tensor], Tensor],
                 sizes: tuple[Any, ...]) -> tuple[Tensor, Tensor]:
    """The first maximum of each window (NaN wins, as in PyTorch) and its flat index in the input plane.

    ``position(j, kj)`` gives the input coordinate along axis ``j`` of offset ``kj`` in a window of shape ``kernel``.
    """
    rem = cols.argmax(-1)
    first = rem.unsqueeze(-1) == _like(cols, np.arange(cols.shape[-1], dtype=np.int64))
    y = _where(first, cols, _const(cols, 0.0)).sum(-1)
    flat: Any = 0
    mult = 1
    for j in reversed(range(nsp)):
        kj = rem % kernel[j]
        rem = rem // kernel[j]
        flat = flat + position(j, kj) * mult
        mult *= sizes[j]
    return y, flat


def _max_pool(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
              ceil_mode: bool = False, return_indices: bool = False, *, nsp: int) -> Any:
    name = f"max_pool{nsp}d"
    k, s, p, d = _pool_args(x, nsp, kernel_size, stride, padding, dilation, name)
    sizes = tuple(x.shape[-nsp:])
    out, hi = _pool_out(sizes, k, s, p, d, ceil_mode, name)
    pads = tuple(zip(p, hi))
    if not return_indices:  # (fg.nn.max_pool_windows: its two primitives take the Tensor as it is)
        return cast("Tensor", window_gather(x, window_argmax(x, k, s, pads, d), k, s, pads, d, -math.inf))
    # the kernel's argmax (a flat offset in each window) gives the values and PyTorch's flat input indices
    rem = _run_on_tensors(window_argmax, x.detach(), k, s, pads, d)
    y = _run_on_tensors(window_gather, x, rem, k, s, pads, d, -math.inf)
    flat: Any = 0
    mult = 1
    for j in reversed(range(nsp)):
        kj = rem % k[j]
        rem = rem // k[j]
        flat = flat + (_arange_along(x, out[j], j, nsp) * s[j] - p[j] + kj * d[j]) * mult
        mult *= sizes[j]
    return y, flat.long()


def _max_pool_with_indices(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                           ceil_mode: bool = False, return_indices: bool = True, *, nsp: int) -> Any:
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, True, nsp=nsp)


max_pool1d, max_pool2d, max_pool3d = _per_rank(
    _max_pool, "max_pool{n}d", "Max over windows of {axes}. Example: ``F.max_pool{n}d(x, 2)``.")
max_pool1d_with_indices, max_pool2d_with_indices, max_pool3d_with_indices = _per_rank(
    _max_pool_with_indices, "max_pool{n}d_with_indices",
    "``max_pool{n}d`` returning ``(values, indices)``. Example: ``y, i = F.max_pool{n}d_with_indices(x, 2)``.")


def _avg(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
         count_include_pad: bool = True, divisor_override: Any = None, *, nsp: int) -> Tensor:
    name = f"avg_pool{nsp}d"
    k, s, p, d = _pool_args(x, nsp, kernel_size, stride, padding, 1, name)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError(f"{name}: divisor must be not zero")
    sizes = tuple(x.shape[-nsp:])
    out, hi = _pool_out(sizes, k, s, p, d, ceil_mode, name)
    total = _run_on_tensors(window_sum, x, k, s, tuple(zip(p, hi)), d)
    if divisor_override is not None:
        return total / float(divisor_override)
    # PyTorch's divisor: the window clipped to the padded input (or to the input without count_include_pad)
    div = np.ones((), dtype=np.float64)
    for n, kk, ss, pp, o in zip(sizes, k, s, p, out):
        lo = np.arange(o) * ss - pp
        end = np.minimum(lo + kk, n + pp)
        size = end - lo if count_include_pad else np.minimum(end, n) - np.maximum(lo, 0)
        div = np.multiply.outer(div, size.astype(np.float64))
    return total / _const(x, div)


def avg_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows of the last axis. Example: ``F.avg_pool1d(x, 2)``."""
    return _avg(x, kernel_size, stride, padding, ceil_mode, count_include_pad, nsp=1)


avg_pool2d, avg_pool3d = _per_rank(
    _avg, "avg_pool{n}d", "Mean over windows of {axes}. Example: ``F.avg_pool{n}d(x, 2)``.", (2, 3))


def _adaptive_sizes(x: Tensor, output_size: Any, nsp: int, name: str) -> tuple[Any, ...]:
    _check_pool_rank(x, nsp, name)
    sizes = tuple(x.shape[-nsp:])
    req = (output_size,) * nsp if isinstance(output_size, (int, np.integer, type(None))) else tuple(output_size)
    if len(req) != nsp:
        raise RuntimeError(f"{name}: output_size must have {nsp} entries, got {output_size!r}")
    out = tuple(n if o is None else int(o) for n, o in zip(sizes, req))
    if any(o <= 0 for o in out) or any(n <= 0 for n in sizes):
        raise RuntimeError(f"{name}: output_size {out} and input sizes {sizes} must be positive")
    return sizes, out


def _adaptive_bounds(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    # PyTorch's windows: [floor(i * n_in / n_out), ceil((i + 1) * n_in / n_out))
    i = np.arange(n_out)
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def _adaptive_avg(x: Tensor, output_size: Any, *, nsp: int) -> Tensor:
    sizes, out = _adaptive_sizes(x, output_size, nsp, f"adaptive_avg_pool{nsp}d")

    def pool_axis(t: Tensor, axis: int, n_in: int, n_out: int) -> Tensor:
        if n_in % n_out == 0:
            k = n_in // n_out
            shape = tuple(t.shape)
            t = t.reshape(shape[:axis] + (n_out, k) + shape[axis + 1:])
            return t.mean(axis + 1)
        lo, hi = _adaptive_bounds(n_in, n_out)
        return _ops.stack([t.narrow(axis, int(a), int(b - a)).mean(axis) for a, b in zip(lo, hi)], axis)

    # the mean over a product of windows separates axis by axis
    y = x
    for j in range(nsp):
        y = pool_axis(y, x.dim() - nsp + j, sizes[j], out[j])
    return y


def _adaptive_max(x: Tensor, output_size: Any, return_indices: bool = False, *, nsp: int) -> Any:
    name = f"adaptive_max_pool{nsp}d"
    sizes, out = _adaptive_sizes(x, output_size, nsp, name)
    # per axis a table (out, kmax) of input positions; short windows repeat their last element, which never
    # comes before the first maximum, so the argmax is PyTorch's
    bounds = [_adaptive_bounds(n, o) for n, o in zip(sizes, out)]
    tables = [np.minimum(lo[:, None] + np.arange(int((hi - lo).max()))[None, :], hi[:, None] - 1).astype(np.int64)
              for lo, hi in bounds]
    k = tuple(t.shape[1] for t in tables)
    lead = x.dim() - nsp

    def gather(v: Any, *tabs: Any) -> Any:  # (*lead, *spatial) -> (*lead, o0, k0, o1, k1, ...)
        for j, t in enumerate(tabs):
            v = fnp.take(v, t, axis=lead + 2 * j)
        return v

    cols = _run_on_tensors(gather, x, *(_like(x, t) for t in tables))
    # (*lead, o0, k0, o1, k1, ...) -> (*lead, o0, o1, ..., k0, k1, ...) -> (*lead, *out, prod(k))
    perm = tuple(range(lead)) + tuple(lead + 2 * j for j in range(nsp)) + tuple(lead + 2 * j + 1 for j in range(nsp))
    cols = cols.permute(*perm).reshape(tuple(x.shape[:lead]) + out + (math.prod(k),))

    def position(j: int, kj: Tensor) -> Tensor:  # min(lo[o] + kj, hi[o] - 1) at output position o
        lo, hi = (_like(x, b.astype(np.int64).reshape((-1,) + (1,) * (nsp - 1 - j))) for b in bounds[j])
        pos = lo + kj
        return _where(pos < hi, pos, hi - 1)

    y, idx = _argmax_pick(cols, nsp, k, position, sizes)
    return (y, idx) if return_indices else y


def _adaptive_max_with_indices(x: Tensor, output_size: Any, return_indices: bool = True, *, nsp: int) -> Any:
    return _adaptive_max(x, output_size, True, nsp=nsp)


adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d = _per_rank(
    _adaptive_avg, "adaptive_avg_pool{n}d", "Average pooling of {axes} to a given size (an entry None keeps that "
    "size). Example: ``F.adaptive_avg_pool{n}d(x, 1)``.")
adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = _per_rank(
    _adaptive_max, "adaptive_max_pool{n}d", "Max pooling of {axes} to a given size. Example: "
    "``F.adaptive_max_pool{n}d(x, 2)``.")
adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices, adaptive_max_pool3d_with_indices = _per_rank(
    _adaptive_max_with_indices, "adaptive_max_pool{n}d_with_indices", "``adaptive_max_pool{n}d`` returning "
    "``(values, indices)``. Example: ``F.adaptive_max_pool{n}d_with_indices(x, 2)``.")


def _max_unpool(x: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                output_size: Any = None, *, nsp: int) -> Tensor:
    name = f"max_unpool{nsp}d"
    _check_pool_rank(x, nsp, name)
    if tuple(indices.shape) != tuple(x.shape) or indices.is_floating_point():
        raise RuntimeError(f"{name}: indices must be integers of the input's shape {tuple(x.shape)}, "
                           f"got {indices.dtype} of shape {tuple(indices.shape)}")
    k = _ntuple(kernel_size, nsp)
    s = k if stride is None else _ntuple(stride, nsp)
    p = _ntuple(padding, nsp)
    sizes, lead = tuple(x.shape[-nsp:]), tuple(x.shape[:-nsp])
    if output_size is None:
        out = tuple((n - 1) * ss - 2 * pp + kk for n, ss, pp, kk in zip(sizes, s, p, k))
    else:
        req = tuple(int(v) for v in output_size)
        if len(req) not in (nsp, x.dim()):
            raise RuntimeError(f"{name}: output_size must have {nsp} or {x.dim()} entries, got {output_size!r}")
        out = req[-nsp:]
    total = math.prod(out)
    iv = _raw(indices._value)
    # checked on host values only: a traced or device index would need a sync (the gather would still refuse it)
    if x.numel() and not isinstance(iv, Box) and namespace_of(iv) is np and (
            int(iv.min()) < 0 or int(iv.max()) >= total):
        raise RuntimeError(f"{name}: found an index outside the output plane of {total} elements {out}")

    m = math.prod(sizes)
    offsets = _like(x, np.arange(math.prod(lead), dtype=np.int64)[:, None] * total)

    def scatter_add(z: Any, v: Any, iv: Any, off: Any) -> Any:
        flat = fnp.at(z)[fnp.reshape(fnp.reshape(iv, (-1, m)) + off, (-1,))].add(fnp.reshape(v, (-1,)))
        return fnp.reshape(flat, lead + out)

    xp = namespace_of(x._value)  # made on x's device (x.new_zeros gives host arrays today)
    zeros = Tensor._make(xp.zeros((math.prod(lead) * total,), dtype=x._value.dtype))
    added = _run_on_tensors(scatter_add, zeros, x, indices, offsets)
    count = _run_on_tensors(scatter_add, zeros, Tensor._make(xp.ones(tuple(x.shape), dtype=x._value.dtype)), indices,
                            offsets)
    # Overlapping windows can repeat an index, always with the same value (it is one input element): the
    # value is the mean of the writes; the gradient is PyTorch's, a gather at the indices (that of the sum).
    return (added / _where(count > 0, count, _const(count, 1.0))).detach() + (added - added.detach())


max_unpool1d, max_unpool2d, max_unpool3d = _per_rank(
    _max_unpool, "max_unpool{n}d", "Put each value back at its ``max_pool{n}d`` index (zeros elsewhere): the "
    "partial inverse of ``max_pool{n}d(..., return_indices=True)``. Example: ``F.max_unpool{n}d(y, i, 2)``.")


# --------------------------------------------------------------------------- normalization


def _update_running(buf: Tensor | None, new: Any) -> None:
    if buf is None:
        return
    v = _raw(new)
    buf._value[...] = v.astype(buf._value.dtype, copy=False)
    buf._version_counter[0] += 1


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Batch normalization over all axes but 1 (``funcgrad.nn.batch_norm``); running stats updated in place.

    Example: ``F.batch_norm(x, rm, rv, training=True)``.
    """
    if training:
        size = x.numel() // x.shape[1]
        if size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {tuple(x.shape)}")
    # the running statistics are blended outside the Tensor graph (nothing recorded for them)
    track = training and running_mean is not None
    if track and running_var is not None and weight is not None and bias is not None:
        # the kernel that normalizes returns the batch statistics too: no second pass over x
        # (funcgrad.numpy functions only, no NumPy-semantics methods: it takes the Tensors as they are)
        y, mean, var = _fnn.norm.batch_norm_train(x, weight, bias, eps=eps, axis=1)
        _blend_running(cast(Tensor, running_mean), running_var, fnp.reshape(_raw(mean), (-1,)),
                       fnp.reshape(_raw(var), (-1,)), x.numel() // x.shape[1], momentum)
        return cast("Tensor", _as_tensor_box(y))
    rm = None if running_mean is None or track else running_mean._value
    rv = None if running_var is None or track else running_var._value
    boxes = _boxes(x, weight, bias)
    y, _, _ = _fnn.batch_norm(boxes[0], rm, rv, boxes[1], boxes[2], training=training, momentum=momentum,
                              eps=eps, axis=1)
    if track:
        _blend_batch_statistics(x._value, cast(Tensor, running_mean), running_var, momentum)
    return cast("Tensor", _as_tensor_box(y))


def _blend_running(running_mean: Tensor, running_var: Tensor | None, mean: Any, var: Any, count: int,
                   momentum: float) -> None:
    """``running = (1 - momentum) running + momentum batch`` for the batch's per-channel ``mean`` and biased
    ``var`` (shape ``(C,)``; raw arrays, or values traced by ``ft.compile`` / ``ft.func``) over ``count``
    values each, the variance made unbiased, written into the buffers (their version counters advance):
    one kernel, in place on the buffers' arrays when nothing is traced. Traced statistics are not
    differentiated (the running ones are state, not a result)."""
    if running_var is None:
        mean = stop_gradient(mean) if isinstance(mean, Box) else mean
        _update_running(running_mean, (1 - momentum) * running_mean._value + momentum * mean)
        return
    rm, rv = running_mean._value, running_var._value
    if isinstance(mean, Box) or isinstance(rm, Box) or isinstance(rv, Box) or isinstance(momentum, Box):
        new_mean, new_var = blend_running_statistics(rm, rv, stop_gradient(mean), stop_gradient(var), momentum,
                                                     count)
        _update_running(running_mean, new_mean)
        _update_running(running_var, new_var)
        return
    blend_running_statistics_into(rm, rv, mean, var, momentum, count)
    running_mean._version_counter[0] += 1
    running_var._version_counter[0] += 1


def _blend_batch_statistics(x: Any, running_mean: Tensor, running_var: Tensor | None, momentum: float) -> None:
    """:func:`_blend_running` with the statistics of ``x`` (a raw array, or a value traced by ``ft.compile`` /
    ``ft.func``: then not differentiated) over every axis but 1."""
    shape = fnp.shape(x)
    axes = (0,) + tuple(range(2, len(shape)))
    count = math.prod(shape) // shape[1]
    if not isinstance(x, Box):  # the array's own namespace, the centred copy squared in place (the same numbers)
        xp = namespace_of(x)
        mean_kept = xp.mean(x, axis=axes, keepdims=True)
        centred = x - mean_kept
        centred *= centred
        _blend_running(running_mean, running_var, xp.reshape(mean_kept, (-1,)), xp.mean(centred, axis=axes), count,
                       momentum)
        return
    x = stop_gradient(x)
    mean = fnp.mean(x, axis=axes)
    centred = x - fnp.reshape(mean, (1, shape[1]) + (1,) * (len(shape) - 2))
    _blend_running(running_mean, running_var, mean, fnp.mean(fnp.square(centred), axis=axes), count, momentum)


def layer_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes (``funcgrad.nn.layer_norm``). Example: ``F.layer_norm(x, (8,))``."""
    ns = _ntuple(normalized_shape, 1)
    if tuple(x.shape[-len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size {list(x.shape)}")
    if (len(ns) == 1 and weight is not None and bias is not None and tuple(weight.shape) == ns == tuple(bias.shape)
            and x.dtype is weight.dtype is bias.dtype and x.dtype.is_floating_point and not x.dtype.is_complex):
        # (fg.nn.layer_norm's one-node case: its primitive takes the Tensors as they are, no bridge boxes)
        return cast("Tensor", layer_norm_affine(x, weight, bias, float(eps)))
    return _run_on_tensors(_fnn.layer_norm, x, len(ns), weight, bias, eps)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Group normalization of ``(N, C, *)`` (``funcgrad.nn.group_norm``). Example: ``F.group_norm(x, 2)``."""
    if x.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    return _run_on_tensors(_fnn.group_norm, x, num_groups, weight, bias, eps)


def instance_norm(x: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) over its spatial axes: group norm with one channel per group.

    Example: ``F.instance_norm(x)``.
    """
    if not use_input_stats:
        return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    y = group_norm(x, x.shape[1], weight, bias, eps)
    if running_mean is not None:
        with no_grad():
            axes = tuple(range(2, x.dim()))
            n = math.prod(x.shape[2:])
            m = x.detach().mean(axes).mean(0)
            v = (x.detach().var(axes, correction=0) * (n / max(n - 1, 1))).mean(0)
            _update_running(running_mean, (1 - momentum) * running_mean._value + momentum * m._value)
            _update_running(running_var, (1 - momentum) * cast(Tensor, running_var)._value + momentum * v._value)
    return y


def normalize(x: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``. Example: ``F.normalize(x, dim=-1)``."""
    return x / x.norm(p, dim, keepdim=True).clamp_min(eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / max(||x1|| ||x2||, eps)`` along ``dim``. Example: ``F.cosine_similarity(a, b, dim=-1)``."""
    n = (x1.norm(2, dim) * x2.norm(2, dim)).clamp_min(eps)
    return (x1 * x2).sum(dim) / n


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last axis. Example: ``F.pairwise_distance(a, b)``."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


# --------------------------------------------------------------------------- embedding, one_hot, pad, interpolate


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` at the integer ``input``; ``padding_idx`` rows get no gradient; ``max_norm``
    renormalizes the looked-up rows in place (as PyTorch). Example: ``F.embedding(ids, w)``."""
    idx = _as_tensor(input)
    if idx.dtype.is_floating_point:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {idx.dtype.name} instead")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(scale_grad_by_freq/sparse) is not supported by funcgrad.tensor")
    v, n = idx._value, weight.shape[0]
    # a negative index would silently pick a row from the end (NumPy indexing)
    if v.size and bool(namespace_of(v).any((v < 0) | (v >= n))):
        raise IndexError(
            f"index out of range in self: embedding of {n} rows takes indices in [0, {n}), "
            f"got {int(v.min())} to {int(v.max())}"
        )
    if max_norm is not None:
        _renorm_rows_(weight, idx, max_norm, norm_type)
    out = weight[idx]
    if padding_idx is not None:
        pi = padding_idx % weight.shape[0]
        keep = Tensor._make((idx._value != pi)[..., None].astype(weight._value.dtype))  # on idx's device
        out = _where(keep > 0, out, out.detach())
    return out


def one_hot(t: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last axis. Example: ``F.one_hot(labels, 10)``."""
    t = _as_tensor(t)
    if t.dtype.is_floating_point:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    v = t._value
    xp = namespace_of(v)
    if xp is np and v.size and v.min() < 0:  # host values only: a device would read back (PyTorch's CUDA too)
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        # the number of classes sets the output's size: one explicit read of the largest value, as in PyTorch
        n = int(to_numpy(v.max())) + 1 if v.size else 0
    else:
        n = num_classes
    if xp is np and v.size and int(v.max()) >= n:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._make((v[..., None] == xp.arange(n)).astype(xp.int64))  # on v's device


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Pad the last ``len(pad) // 2`` axes: ``pad = (left_last, right_last, left_prev, right_prev, ...)``.

    Modes: constant, reflect, replicate, circular (as PyTorch). Example: ``F.pad(x, (1, 1, 2, 0))``.
    """
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    n = len(pad) // 2
    if n > x.dim():
        raise ValueError("Padding length should be less than or equal to two times the input dimension")
    widths = [(0, 0)] * (x.dim() - n) + [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in reversed(range(n))]
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
    if np_mode is None:
        raise NotImplementedError(f"pad(mode={mode!r}): expected 'constant', 'reflect', 'replicate' or 'circular'")
    if mode == "reflect":  # PyTorch's check (NumPy would reflect repeatedly)
        for d, (lo, hi) in enumerate(widths):
            if (lo, hi) != (0, 0) and (lo >= x.shape[d] or hi >= x.shape[d]):
                raise RuntimeError(f"Argument #{len(pad) + 2}: Padding size should be less than the corresponding "
                                   f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                                   f"{list(x.shape)}")
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        sl = tuple(slice(-lo if lo < 0 else None, hi if hi < 0 else None) for lo, hi in widths)
        x = x[sl]
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    fill = {"constant_values": value or 0.0} if np_mode == "constant" else {}
    return _run_on_tensors(lambda v: fnp.pad(v, tuple(widths), mode=np_mode, **fill), x)


def interpolate(x: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial axes: modes nearest, linear, bilinear (``align_corners`` as PyTorch).

    Example: ``F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)``.
    """
    nsp = x.dim() - 2
    if nsp < 1:
        raise ValueError(f"interpolate: expected input with at least 3 dimensions (N, C, *spatial), got {x.dim()}")
    if mode not in ("nearest", "linear", "bilinear", "trilinear"):
        raise NotImplementedError(f"interpolate(mode={mode!r}) is not supported; use nearest, linear or bilinear")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = tuple(x.shape[2:])
    if size is not None:
        out = _ntuple(size, nsp)
        ratios = [i / o for i, o in zip(in_sizes, out)]
    else:
        sf = (float(scale_factor),) * nsp if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        out = tuple(int(math.floor(i * s)) for i, s in zip(in_sizes, sf))
        # the source step: 1 / scale_factor as given, unless recomputed from the sizes
        ratios = [i / o if recompute_scale_factor else 1.0 / s for i, o, s in zip(in_sizes, out, sf)]
    y = x
    for j in range(nsp):
        axis = 2 + j
        n_in, n_out, ratio = in_sizes[j], out[j], ratios[j]
        if mode == "nearest":
            src = np.minimum(np.floor(np.arange(n_out) * ratio).astype(np.int64), n_in - 1)
            y = y.index_select(axis, _like(x, src))
            continue
        if align_corners:
            pos = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            pos = np.maximum((np.arange(n_out) + 0.5) * ratio - 0.5, 0.0)
        lo = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        frac = (pos - lo).astype(x._value.dtype)
        shape = [1] * y.dim()
        shape[axis] = n_out
        w = _like(x, frac.reshape(shape))
        a = y.index_select(axis, _like(x, lo))
        b = y.index_select(axis, _like(x, hi))
        y = a + (b - a) * w
    return y


def upsample(x: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate`. Example: ``F.upsample(x, scale_factor=2)``."""
    return interpolate(x, size, scale_factor, mode, align_corners)


# --------------------------------------------------------------------------- attention


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v``; a boolean ``attn_mask`` is True where attending is allowed
    (PyTorch's convention for this function). Example: ``F.scaled_dot_product_attention(q, k, v, is_causal=True)``."""
    L, S = query.shape[-2], key.shape[-2]
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    logits = query.matmul(key.transpose(-2, -1)) * sc
    if is_causal:
        allowed = _like(query, np.tril(np.ones((L, S), dtype=bool)))
        logits = logits.masked_fill(allowed.logical_not(), -math.inf)
    if attn_mask is not None:
        m = _as_tensor(attn_mask)
        logits = logits.masked_fill(m.logical_not(), -math.inf) if m.dtype is _dt.bool else logits + m
    w = logits.softmax(-1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return w.matmul(value)


# --------------------------------------------------------------------------- losses


def _class_weights(logp: Tensor, target: Any, weight: Tensor | None, ignore_index: int) -> tuple[Tensor, Tensor]:
    """(per-sample -log p[target] times weight[target], the per-sample weight) with ignored entries at 0."""
    tv = _as_tensor(target)._value
    xp = namespace_of(tv)
    keep = tv != ignore_index
    safe = xp.where(keep, tv, 0)
    axis = 1 if logp.dim() > 1 else 0
    picked = logp.gather(axis, Tensor._make(xp.expand_dims(safe, axis))).squeeze(axis)
    w = xp.ones(safe.shape, dtype=logp._value.dtype) if weight is None else weight._value[safe]
    wt = Tensor._make((w * keep).astype(logp._value.dtype))
    return -picked * wt, wt


_cross_entropy_of_labels = named_result("NllLossBackward0", _fnn.cross_entropy)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of class scores ``(N, C, ...)`` against indices or probabilities, with PyTorch's
    ``weight``, ``ignore_index`` and ``label_smoothing``. Example: ``F.cross_entropy(logits, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    target = _as_tensor(target)
    axis = 1 if input.dim() > 1 else 0
    if weight is None:
        tgt: Any = target
        if not target.dtype.is_floating_point:
            if target.dtype is not _dt.int64 and target.dtype is not _dt.int32:
                raise RuntimeError(f"expected scalar type Long but found {target.dtype.name}")
            tgt = target._value
            if _check_class_targets(tgt, input.shape[axis], ignore_index):
                # Entries equal to ignore_index are left out (PyTorch's rule: the mean is over the
                # others). On a device this path is always taken: checking for them first would
                # read the labels back to the host.
                return _cross_entropy_ignoring(input, tgt, axis, label_smoothing, reduction, ignore_index)
            # (fg.nn's cross entropy is funcgrad.numpy functions and one primitive on the logits: it takes the
            # Tensor as it is, no bridge boxes; the labels are an array)
            return cast("Tensor", _cross_entropy_of_labels(input, tgt, axis=axis, label_smoothing=label_smoothing,
                                                           reduction=reduction))
        return _run_on_tensors_named("NllLossBackward0", _fnn.cross_entropy, input, tgt, axis=axis,
                         label_smoothing=label_smoothing, reduction=reduction)
    logp = input.log_softmax(axis)
    C = input.shape[axis]
    wshape = [1] * input.dim()
    wshape[axis] = C
    wb = weight.reshape(wshape)
    if target.dtype.is_floating_point:
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / C
        return _reduce(-(logp * wb * target).sum(axis), reduction, None)
    _check_class_targets(target._value, C, ignore_index)
    nll, wt = _class_weights(logp, target, weight, ignore_index)
    if label_smoothing:
        keep = Tensor._make((target._value != ignore_index).astype(logp._value.dtype))
        smooth = -(logp * wb).sum(axis) * keep
        nll = nll * (1 - label_smoothing) + smooth * (label_smoothing / C)
    return _reduce(nll, reduction, wt)


def _check_class_targets(tv: Any, n_classes: int, ignore_index: int) -> bool:
    """PyTorch's IndexError for a class index outside ``[0, n_classes)`` (other than ``ignore_index``);
    host labels only (on a device, checking would read them back). Returns whether some label may be
    ``ignore_index``: on the host whether one is, on a device always (finding out would read them back)."""
    if namespace_of(tv) is not np:
        return True
    if tv.size:
        lo, hi = tv.min(), tv.max()
        if 0 <= lo and hi < n_classes:  # (the common case: every label a class, in two reductions)
            return 0 <= ignore_index < n_classes and bool((tv == ignore_index).any())
    ignored = tv == ignore_index
    bad = ~ignored & ((tv < 0) | (tv >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(tv[bad].flat[0])} is out of bounds.")
    return bool(ignored.any())


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``(N, C, ...)`` at integer targets, weighted.

    Example: ``F.nll_loss(F.log_softmax(x, 1), y)``.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    tv = _as_tensor(target)._value
    some_ignored = _check_class_targets(tv, input.shape[1 if input.dim() > 1 else 0], ignore_index)
    if weight is None and namespace_of(tv) is np and not some_ignored:
        # (on a device, checking would read the labels back)
        return _run_on_tensors_named("NllLossBackward0", _fnn.nll_loss, input, tv, axis=1 if input.dim() > 1 else 0,
                         reduction=reduction)
    nll, wt = _class_weights(input, target, weight, ignore_index)
    return _reduce(nll, reduction, wt)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-(t log p + (1 - t) log(1 - p))`` with logs clamped at -100 (as PyTorch). Example: ``F.binary_cross_entropy(p, t)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"binary_cross_entropy: Using a target size ({list(target.shape)}) that is different to the "
                         f"input size ({list(input.shape)}) is deprecated. Please ensure they have the same size.")
    lo = input.log().clamp_min(-100.0)
    l1 = (1.0 - input).log().clamp_min(-100.0)
    loss = -(target * lo + (1.0 - target) * l1)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Huber loss divided by ``beta`` (PyTorch's SmoothL1). Example: ``F.smooth_l1_loss(x, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    return huber_loss(input, target, reduction=reduction, delta=beta) / beta


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` for log-probabilities ``input``; ``reduction='batchmean'`` divides
    the sum by the batch size. Example: ``F.kl_div(logq, p, reduction="batchmean")``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        safe = _where(target > 0, target, _const(target, 1.0))
        loss = _where(target > 0, target * (safe.log() - input), _const(input, 0.0) * input)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-y x))``. Example: ``F.soft_margin_loss(x, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(_softplus(-_as_tensor(target) * input), reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``max(0, -y (x1 - x2) + margin)``. Example: ``F.margin_ranking_loss(a, b, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-_as_tensor(target) * (input1 - input2) + margin).clamp_min(0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None,  # noqa: A002
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``x`` where ``y == 1``, ``max(0, margin - x)`` where ``y == -1``. Example: ``F.hinge_embedding_loss(x, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target)
    loss = _where(target == 1, input, _const(input, 0.0)) + _where(target == -1, (margin - input).clamp_min(0.0),
                                                                 _const(input, 0.0))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``1 - cos`` for ``y == 1``, ``max(0, cos - margin)`` for ``y == -1``. Example: ``F.cosine_embedding_loss(a, b, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target)
    eps = 1e-12
    cos = (input1 * input2).sum(-1) / ((input1 * input1).sum(-1) + eps).sqrt() / ((input2 * input2).sum(-1) + eps).sqrt()
    zero = cos * 0.0
    loss = _where(target == 1, 1.0 - cos, zero) + _where(target == -1, (cos - margin).clamp_min(0.0), zero)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False, eps: float = 1e-6,  # noqa: A002
                      reduction: str = "mean") -> Tensor:
    """``0.5 (log var + (x - y)^2 / var)`` (+ ``0.5 log 2 pi`` with ``full``). Example: ``F.gaussian_nll_loss(mu, y, var)``."""
    v = _as_tensor(var).clamp_min(eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,  # noqa: A002
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    """``exp(x) - y x`` (log input) or ``x - y log(x + eps)``. Example: ``F.poisson_nll_loss(x, y)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    target = _as_tensor(target)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = target._value
        st = np.where(t > 1, t * np.log(np.where(t > 1, t, 1)) - t + 0.5 * np.log(2 * np.pi * np.where(t > 1, t, 1)), 0)
        loss = loss + Tensor._make(st.astype(input._value.dtype))
    return _reduce(loss, reduction)


__all__ = [
    "relu", "relu6", "hardtanh", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "softsign", "sigmoid",
    "hardsigmoid", "hardswish", "logsigmoid", "tanh", "tanhshrink", "softmax", "softmin", "log_softmax", "threshold",
    "glu", "prelu", "leaky_relu", "linear",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d", "conv_transpose3d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "normalize", "cosine_similarity", "pairwise_distance",
    "embedding", "one_hot", "pad", "interpolate", "upsample", "scaled_dot_product_attention",
    "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "gaussian_nll_loss", "poisson_nll_loss",
]


# --------------------------------------------------------------------------- more of torch.nn.functional


def hardshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0. Example: ``F.hardshrink(x)``."""
    return _where(x.abs() > lambd, x, x * 0.0)


def softshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd * sign(x)`` where ``|x| > lambd``, else 0. Example: ``F.softshrink(x)``."""
    return _where(x > lambd, x - lambd, _where(x < -lambd, x + lambd, x * 0.0))


def rms_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing axes (eps defaults to the dtype's machine
    epsilon, as PyTorch). Example: ``F.rms_norm(x, (8,))``."""
    ns = _ntuple(normalized_shape, 1)
    e = float(np.finfo(x._value.dtype).eps) if eps is None else eps
    dims = tuple(range(-len(ns), 0))
    y = x * ((x * x).mean(dims, keepdim=True) + e).rsqrt()
    return y * weight if weight is not None else y


def pixel_shuffle(x: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C r^2, H, W) -> (*, C, H r, W r)``. Example: ``F.pixel_shuffle(x, 2)``."""
    r = upscale_factor
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(x: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H r, W r) -> (*, C r^2, H, W)`` (the inverse of :func:`pixel_shuffle`). Example: ``F.pixel_unshuffle(x, 2)``."""
    r = downscale_factor
    *lead, c, h, w = x.shape
    n = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def upsample_nearest(x: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated alias of ``interpolate(mode='nearest')``. Example: ``F.upsample_nearest(x, scale_factor=2)``."""
    return interpolate(x, size, scale_factor, "nearest")


def upsample_bilinear(x: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated alias of ``interpolate(mode='bilinear', align_corners=True)``. Example: ``F.upsample_bilinear(x, size=4)``."""
    return interpolate(x, size, scale_factor, "bilinear", align_corners=True)


def bilinear(x1: Tensor, x2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k`` with ``weight (out, in1, in2)``. Example: ``F.bilinear(a, b, w)``."""
    y = _ops.einsum("...i,kij,...j->...k", x1, weight, x2)
    return y + bias if bias is not None else y


def pdist(x: Tensor, p: float = 2.0) -> Tensor:
    """The condensed pairwise ``p``-distances of the rows of ``(N, M)`` (upper triangle, row-major).

    Example: ``F.pdist(points)``.
    """
    n = x.shape[0]
    i, j = np.triu_indices(n, 1)
    return (x[_like(x, i)] - x[_like(x, j)]).norm(p, -1)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise distance. Example: ``F.triplet_margin_loss(a, p, n)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dn = _ops.minimum(dn, pairwise_distance(positive, negative, p, eps))
    return _reduce((dp - dn + margin).clamp_min(0.0), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Mean over classes of the binary cross entropy of logits. Example: ``F.multilabel_soft_margin_loss(z, t)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    t = _as_tensor(target)
    loss = -(t * logsigmoid(input) + (1.0 - t) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """Softmax of ``(logits + Gumbel noise) / tau``; ``hard`` gives one-hot values with the soft gradient.

    Example: ``F.gumbel_softmax(logits, tau=0.5, hard=True)``.
    """
    g = -np.log(default_generator._rng.exponential(size=tuple(logits.shape)))
    y = ((logits + _like(logits, g.astype(logits._value.dtype))) / tau).softmax(dim)
    if not hard:
        return y
    idx = y.detach().argmax(dim, keepdim=True)._value
    xp = namespace_of(idx)
    axis = dim % y.dim()
    position = xp.arange(y.shape[axis]).reshape((-1,) + (1,) * (y.dim() - 1 - axis))
    hard_y = Tensor._make((position == idx).astype(y._value.dtype))  # one-hot on y's own device
    return hard_y - y.detach() + y


relu6, hardtanh, elu, selu, celu, mish, hardsigmoid, hardswish, threshold = (
    _honour_inplace(f) for f in (relu6, hardtanh, elu, selu, celu, mish, hardsigmoid, hardswish, threshold))
silu, leaky_relu, dropout, dropout1d, dropout2d, dropout3d, alpha_dropout = (
    _honour_inplace(f) for f in (silu, leaky_relu, dropout, dropout1d, dropout2d, dropout3d, alpha_dropout))


def _inplace(fn: Any) -> Any:
    def f(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        with no_grad() if not x.requires_grad and not _func_traced(x._value) else contextlib.nullcontext():
            return x.copy_(fn(x, *args, **kwargs))  # (a transform's traced x: differentiated, as torch.func)

    f.__name__ = fn.__name__ + "_"
    f.__doc__ = f"In-place ``{fn.__name__}``: writes the result into ``x``. Example: ``F.{fn.__name__}_(x)``."
    return f


relu_, elu_, selu_, celu_, leaky_relu_, hardtanh_, threshold_ = (
    _inplace(f) for f in (relu, elu, selu, celu, leaky_relu, hardtanh, threshold))

__all__ += ["hardshrink", "softshrink", "rms_norm", "pixel_shuffle", "pixel_unshuffle", "upsample_nearest",
            "upsample_bilinear", "bilinear", "pdist", "triplet_margin_loss", "multilabel_soft_margin_loss",
            "gumbel_softmax", "relu_", "elu_", "selu_", "celu_", "leaky_relu_", "hardtanh_", "threshold_"]

# --------------------------------------------------------------------------- families in their own modules

from .window_ops import (  # noqa: E402
    channel_shuffle, conv_tbc, fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices, local_response_norm, lp_pool1d, lp_pool2d, lp_pool3d, native_channel_shuffle,
)
from .ranking_losses import (  # noqa: E402
    ctc_loss, multi_margin_loss, multilabel_margin_loss, triplet_margin_with_distance_loss,
)
from .grid_sampling import affine_grid, grid_sample  # noqa: E402
from .noise_ops import feature_alpha_dropout, rrelu, rrelu_  # noqa: E402
from .embedding_bag import embedding_bag  # noqa: E402
from .torch_function import (  # noqa: E402
    assert_int_or_pair, boolean_dispatch, handle_torch_function, has_torch_function, has_torch_function_unary,
    has_torch_function_variadic,
)

__all__ += ["channel_shuffle", "native_channel_shuffle", "conv_tbc", "fractional_max_pool2d",
            "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
            "local_response_norm", "lp_pool1d", "lp_pool2d", "lp_pool3d", "ctc_loss", "multi_margin_loss",
            "multilabel_margin_loss", "triplet_margin_with_distance_loss", "affine_grid", "grid_sample",
            "feature_alpha_dropout", "rrelu", "rrelu_", "embedding_bag", "assert_int_or_pair", "boolean_dispatch",
            "handle_torch_function", "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic"]
