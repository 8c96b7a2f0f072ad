"""Reductions and scans of ``Tensor`` beyond ``_tensor_math``: ``aminmax``, ``cummax``/``cummin`` (values and
indices), ``logcumsumexp``, ``kthvalue``, ``mode``, ``nanmean``, ``nanmedian``, ``quantile``/``nanquantile``,
``histc``, ``histogram``, ``bincount``, ``cov``, ``corrcoef``, ``dist``, ``diff``, ``renorm``, ``msort`` and the
in-place ``cumsum_``/``cumprod_``/``renorm_``.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` that does not import ``tensor.py``. Values that select
elements (``cummax``, ``kthvalue``, ``mode``, quantiles) are gathered from the tensor at indices computed on
its own device, so their gradients go to the selected elements, to any order; counts (``histc``,
``bincount``, ``histogram``) carry no gradient.

Example::

    x = ft.tensor([[1.0, 3.0, 2.0], [0.0, -1.0, 4.0]], requires_grad=True)
    x.cummax(1).values          # [[1, 3, 3], [0, 0, 4]]
    x.quantile(0.5, dim=1)      # [2, 0]
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import collections
import warnings
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy.prefix_scans import accumulate, logcumsumexp as _logcumsumexp

from ..backend import namespace_of
from . import dtypes as _dt
from .inplace_variant import inplace_variant
from .tensor_class import is_tensor, new_tensor
from .tensor_type import TensorBase, TensorT
from .tensor_helpers import evenly_shared

# torch.return_types.<name>
Aminmax = collections.namedtuple("aminmax", ["min", "max"])  # type: ignore[name-match]
Cummax = collections.namedtuple("cummax", ["values", "indices"])  # type: ignore[name-match]
Cummin = collections.namedtuple("cummin", ["values", "indices"])  # type: ignore[name-match]
Kthvalue = collections.namedtuple("kthvalue", ["values", "indices"])  # type: ignore[name-match]
Mode = collections.namedtuple("mode", ["values", "indices"])  # type: ignore[name-match]
Nanmedian = collections.namedtuple("nanmedian", ["values", "indices"])  # type: ignore[name-match]
Histogram = collections.namedtuple("histogram", ["hist", "bin_edges"])  # type: ignore[name-match]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _dim(d: Any, nd: int) -> int:
    """``d`` wrapped into ``[0, nd)`` (a 0-d tensor has the one dim 0 / -1), with PyTorch's error."""
    n = max(nd, 1)
    d = builtins.int(d)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return builtins.int(d % n)


def _index_tensor(raw: Any) -> Any:
    """A history-free int64 tensor of the raw index array ``raw``."""
    return new_tensor(raw.astype(np.int64))


def _is_nan(raw: Any) -> Any:
    return raw != raw  # (any dtype: integers and booleans are never NaN)


def _cumulative_extreme(t: TensorT, dim: Any, largest: bool) -> tuple["TensorT", "TensorT"]:
    """``cummax``/``cummin``: the running extreme and the index where it was reached (the last of equal
    values; a NaN, once met, is the extreme from there on, as in PyTorch)."""
    if t.dim() == 0:
        return t.clone(), _index_tensor(namespace_of(t._value).zeros((), np.int64))
    d = _dim(dim, t.dim())
    raw = t._value
    xp = namespace_of(raw)
    shape = [1] * raw.ndim
    shape[d] = raw.shape[d]
    positions = xp.broadcast_to(xp.reshape(xp.arange(raw.shape[d]), shape), raw.shape)
    # the running extreme (NaN, once met, stays: maximum/minimum propagate it), then the index of the last
    # element equal to it (or NaN) so far
    running = accumulate(xp.maximum if largest else xp.minimum, raw, d)
    reached = (raw == running) | _is_nan(raw)
    idx = accumulate(xp.maximum, xp.where(reached, positions, 0), d)
    index = _index_tensor(idx)
    return t.gather(d, index), index


def _rows_last(t: TensorT, dim: Any) -> tuple["TensorT", int | None]:
    """``t`` with the reduced dim last (flattened to one dim when ``dim`` is None), and that dim."""
    if dim is None:
        return t.reshape(-1), None
    d = _dim(dim, t.dim())
    return (t.movedim(d, -1) if t.dim() else t.reshape(1)), d


def _keep(out: TensorT, t: TensorT, d: int | None, keepdim: bool, lead: int = 0) -> "TensorT":
    """A reduction's result (reduced dim gone, ``lead`` extra leading dims) with the dim kept when asked."""
    if not keepdim or not t.dim():
        return out
    if d is None:
        return out.reshape(tuple(out.shape[:lead]) + (1,) * t.dim())
    return out.unsqueeze(lead + d)


def _cov_weights(w: Any, name: str, kinds: str, kind_name: str) -> Any:
    """``cov``'s ``fweights``/``aweights``, checked as PyTorch checks them (dtype kind, no negative entry)."""
    if w._value.dtype.kind not in kinds:
        raise RuntimeError(f"cov(): expected {name} to have {kind_name} dtype but got {name} with "
                           f"{_dt.SCALAR_NAMES[w.dtype]} dtype")
    if builtins.bool((w._value < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


class _ReductionsMoreMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ running extremes, log-sum scans
    def aminmax(self: TensorT, *, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """``(min, max)`` over ``dim`` (all elements when None). Example: ``ft.tensor([1, 3, 2]).aminmax()``."""
        if self.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        if dim is None:
            lo, hi = self.amin(), self.amax()
            return Aminmax(lo.reshape((1,) * self.dim()), hi.reshape((1,) * self.dim())) if keepdim else \
                Aminmax(lo, hi)
        return Aminmax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def cummax(self: TensorT, dim: builtins.int) -> Any:
        """``(values, indices)``: the running maximum along ``dim`` and where it was reached. Example:
        ``ft.tensor([1.0, 3.0, 2.0]).cummax(0)  # values [1, 3, 3], indices [0, 1, 1]``."""
        return Cummax(*_cumulative_extreme(self, dim, largest=True))

    def cummin(self: TensorT, dim: builtins.int) -> Any:
        """``(values, indices)``: the running minimum along ``dim`` and where it was reached."""
        return Cummin(*_cumulative_extreme(self, dim, largest=False))

    def logcumsumexp(self: TensorT, dim: builtins.int) -> "TensorT":
        """``log(cumsum(exp(self), dim))``, computed stably. Example: ``ft.zeros(3).logcumsumexp(0)``."""
        x = self if self._value.dtype.kind in "fc" else self.to(_dt.get_default_dtype())
        return _logcumsumexp(x, _dim(dim, self.dim()))

    cumsum_, cumprod_ = inplace_variant("cumsum"), inplace_variant("cumprod")

    # ------------------------------------------------------------------ order statistics
    def kthvalue(self: TensorT, k: builtins.int, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """``(values, indices)`` of the ``k``-th smallest element (1-based) along ``dim``. Example:
        ``ft.tensor([3.0, 1.0, 2.0]).kthvalue(2)  # (2., 2)``."""
        d = _dim(dim, self.dim())
        n = self.shape[d] if self.dim() else 1
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
        x = self if self.dim() else self.reshape(1)
        idx = x.sort(d, stable=True).indices.narrow(d, k - 1, 1)
        vals = x.gather(d, idx)
        if not self.dim():
            return Kthvalue(vals.reshape(()), idx.reshape(()))
        return Kthvalue(vals, idx) if keepdim else Kthvalue(vals.squeeze(d), idx.squeeze(d))

    def msort(self: TensorT) -> "TensorT":
        """``sort(self, dim=0).values``."""
        return self.sort(0).values

    def mode(self: TensorT, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """``(values, indices)``: the most frequent value along ``dim`` (the smallest of equally frequent ones)
        and the last index where it occurs. Example: ``ft.tensor([2, 1, 2, 1, 3]).mode()  # (1, 3)``."""
        x, d = _rows_last(self, dim)
        raw = x._value
        xp = namespace_of(raw)
        n = raw.shape[-1]
        if n == 0:
            raise IndexError("mode(): Expected reduction dim 0 to have non-zero size.")
        same = raw[..., :, None] == raw[..., None, :]  # (..., n, n)
        counts = xp.sum(same, axis=-1)
        most = xp.max(counts, axis=-1, keepdims=True)
        ranked = xp.where(counts == most, raw, raw.max() if raw.size else 0)  # the modes, others at the top
        value = xp.min(ranked, axis=-1, keepdims=True)
        positions = xp.broadcast_to(xp.arange(n), raw.shape)
        last = xp.max(xp.where(raw == value, positions, -1), axis=-1, keepdims=True)
        index = _index_tensor(last)
        vals = x.gather(-1, index).squeeze(-1)
        index = index.squeeze(-1)
        return Mode(_keep(vals, self, d, keepdim), _keep(index, self, d, keepdim))

    def nanmedian(self: TensorT, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """The lower median of the non-NaN elements (NaN where all are NaN); with ``dim``, ``(values, indices)``.
        Example: ``ft.tensor([1.0, float('nan'), 3.0, 2.0]).nanmedian()  # 2.``."""
        if dim is None:  # the gradient shared by the elements equal to the median, as PyTorch's
            return evenly_shared(self, self.reshape(-1).nanmedian(0).values, "NanmedianBackward0")
        x, d = _rows_last(self, dim)
        order = x.sort(-1, stable=True).indices  # NaNs last
        valid = (~x.isnan()).sum(-1, keepdim=True)
        k = ((valid - 1).clamp(min=0)) // 2
        index = order.gather(-1, k)
        vals = x.gather(-1, index).squeeze(-1)
        index = index.squeeze(-1)
        return Nanmedian(_keep(vals, self, d, keepdim), _keep(index, self, d, keepdim))

    def nanmean(self: TensorT, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> "TensorT":
        """The mean of the non-NaN elements (NaN where all are NaN). Example:
        ``ft.tensor([1.0, float('nan'), 3.0]).nanmean()  # 2.``."""
        x = self if dtype is None else self.to(dtype)
        if x._value.dtype.kind not in "fc":
            raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                               f"{_dt.SCALAR_NAMES[x.dtype]}")
        nans = x.isnan()
        return fnp.where(nans, 0.0, x).sum(dim, keepdim) / (~nans).sum(dim, keepdim)

    def quantile(self: TensorT, q: Any, dim: Any = None, keepdim: builtins.bool = False, *,
                 interpolation: str = "linear") -> "TensorT":
        """The ``q``-th quantiles (``q`` a float or a 1-D tensor in ``[0, 1]``: then a leading dim of
        ``len(q)``) along ``dim``, interpolated as NumPy's ``linear``/``lower``/``higher``/``midpoint``/
        ``nearest``; NaN where a NaN is reduced. Differentiable.

        Example: ``ft.tensor([1.0, 2.0, 4.0]).quantile(0.5)  # 2.``."""
        return _quantile(self, q, dim, keepdim, interpolation, ignore_nan=False)

    def nanquantile(self: TensorT, q: Any, dim: Any = None, keepdim: builtins.bool = False, *,
                    interpolation: str = "linear") -> "TensorT":
        """``quantile`` of the non-NaN elements (NaN where all are NaN)."""
        return _quantile(self, q, dim, keepdim, interpolation, ignore_nan=True)

    # ------------------------------------------------------------------ counts
    def histc(self: TensorT, bins: builtins.int = 100, min: Any = 0, max: Any = 0) -> "TensorT":  # noqa: A002
        """Counts in ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0; values outside
        are left out), in this tensor's dtype; no gradient. Example: ``ft.tensor([1., 2., 1.]).histc(4, 0, 3)``."""
        if self._value.dtype.kind not in "f":
            raise RuntimeError(f"\"histogram_cpu\" not implemented for '{_dt.SCALAR_NAMES[self.dtype]}'")
        if bins <= 0:
            raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins) + " for bins")
        raw = self._value
        xp = namespace_of(raw)
        lo, hi = builtins.float(min), builtins.float(max)
        if lo > hi:
            raise RuntimeError("torch.histc(): max must be larger than min")
        if lo == hi and raw.size:
            lo, hi = builtins.float(xp.min(raw)), builtins.float(xp.max(raw))  # (one transfer, as PyTorch's)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        return new_tensor(_bin_counts(raw, lo, hi, bins, None))

    def histogram(self: TensorT, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
                  density: builtins.bool = False) -> Any:
        """``(hist, bin_edges)`` as ``numpy.histogram`` (``bins`` an int or a tensor of edges), in this tensor's
        dtype; no gradient. Example: ``ft.tensor([1., 2., 1.]).histogram(2)``."""
        if self._value.dtype.kind not in "f":
            raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, but got "
                               f"input {_dt.SCALAR_NAMES[self.dtype]} and bins {_dt.SCALAR_NAMES[self.dtype]}")
        raw = self._value
        xp = namespace_of(raw)
        w = None if weight is None else weight._value
        if is_tensor(bins):
            edges = bins._value.astype(raw.dtype)
            lo, hi, n = edges[0], edges[-1], edges.shape[0] - 1
            hist = _bin_counts(raw, builtins.float(lo), builtins.float(hi), edges, w)
        else:
            n = builtins.int(bins)
            if range is not None:
                lo, hi = (builtins.float(r) for r in range)
            elif raw.size:
                lo, hi = builtins.float(xp.min(raw)), builtins.float(xp.max(raw))  # (one transfer, as PyTorch's)
            else:
                lo, hi = 0.0, 0.0
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges = _linspace(xp, lo, hi, n + 1, raw.dtype)
            hist = _bin_counts(raw, lo, hi, n, w, edges)
        if density:
            hist = hist / (xp.sum(hist) * (edges[1:] - edges[:-1]))
        return Histogram(new_tensor(hist), new_tensor(edges))

    def bincount(self: TensorT, weights: Any = None, minlength: builtins.int = 0) -> "TensorT":
        """Counts of each non-negative integer (weighted sums with ``weights``: float64 unless they are
        float32, as PyTorch); no gradient. Example: ``ft.tensor([0, 2, 2]).bincount()  # [1, 0, 2]``."""
        raw = self._value
        if raw.ndim != 1 or raw.dtype.kind not in "iu" or (raw.size and builtins.bool((raw < 0).any())):
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if minlength < 0:
            raise RuntimeError("minlength should be >= 0")
        xp = namespace_of(raw)
        if weights is None:
            return _index_tensor(xp.bincount(raw, minlength=minlength))
        w = weights._value if is_tensor(weights) else xp.asarray(weights)
        if w.shape != raw.shape:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        out_dtype = w.dtype if w.dtype == np.float32 else np.float64
        return new_tensor(xp.bincount(raw, weights=w, minlength=minlength).astype(out_dtype))

    # ------------------------------------------------------------------ statistics of rows
    def cov(self: TensorT, *, correction: builtins.int = 1, fweights: Any = None, aweights: Any = None) -> "TensorT":
        """The covariance matrix of the variables in the rows (observations in the columns), with frequency and
        importance weights, as ``numpy.cov``; differentiable.

        Example: ``ft.tensor([[0., 1., 2.], [2., 1., 0.]]).cov()``."""
        if self.dim() > 2:
            raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                               f"{self.dim()} dimensions")
        x = self.reshape(1, -1) if self.dim() < 2 else self
        x = x if x._value.dtype.kind in "fc" else x.to(_dt.get_default_dtype())
        n = x.shape[1]
        w = None
        if fweights is not None:
            w = _cov_weights(fweights, "fweights", "iu", "integral")
        if aweights is not None:
            aweights = _cov_weights(aweights, "aweights", "f", "floating point")
            w = aweights if w is None else w * aweights
            x = x.to(_dt.promote_types(x.dtype, aweights.dtype))  # (float64 weights: a float64 result)
        if w is None:
            mean = x.mean(1, keepdim=True)
            norm: Any = n - correction
        else:
            w = w.to(x.dtype)
            w_sum = w.sum()
            mean = (x * w).sum(1, keepdim=True) / w_sum
            norm = w_sum - correction * ((w * aweights).sum() / w_sum if aweights is not None else 1)
        if not is_tensor(norm) and norm <= 0:
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                          "of observations.", RuntimeWarning, stacklevel=2)
            norm = 0
        elif is_tensor(norm):
            norm = norm.clamp(min=0)
        xm = x - mean
        xw = xm if w is None else xm * w
        out = xw.matmul(xm.transpose(0, 1).conj()) / norm
        return out.reshape(()) if out.shape[0] == 1 else out  # (one variable: 0-d, as PyTorch)

    def corrcoef(self: TensorT) -> "TensorT":
        """Pearson correlation coefficients of the variables in the rows (``numpy.corrcoef``), clipped to
        ``[-1, 1]``; differentiable."""
        c = self.cov()
        if c.dim() == 0:
            return c / c
        d = c.diagonal()
        std = d.sqrt() if not c.is_complex() else d.real.sqrt()
        c = c / std.unsqueeze(1) / std.unsqueeze(0)
        return c if c.is_complex() else c.clamp(-1, 1)

    def dist(self: TensorT, other: Any, p: Any = 2) -> "TensorT":
        """The ``p``-norm of ``self - other`` (``p`` = 0 counts the differing elements, ``inf`` the largest one).
        Example: ``ft.tensor([1.0, 1.0]).dist(ft.zeros(2))  # sqrt(2)``."""
        d = self - other
        if d._value.dtype.kind not in "fc":
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                               f"{_dt.SCALAR_NAMES[d.dtype]}")
        if p == 0:
            return (d != 0).sum().to(d.dtype)
        if p == float("inf"):
            return d.abs().amax()
        if p == -float("inf"):
            return d.abs().amin()
        return d.norm(p)

    def diff(self: TensorT, n: builtins.int = 1, dim: builtins.int = -1, prepend: Any = None,
             append: Any = None) -> "TensorT":
        """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first); XOR for bool
        tensors. Example: ``ft.tensor([1, 3, 6]).diff()  # [2, 3]``."""
        if self.dim() == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        d = _dim(dim, self.dim())
        parts = [p if p.dim() else p.expand(*self.shape[:d], 1, *self.shape[d + 1:])
                 for p in (prepend, self, append) if p is not None]
        x = fnp.concatenate(parts, axis=d) if len(parts) > 1 else self
        for _ in builtins.range(n):
            m = x.shape[d]
            if m == 0:
                break
            hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
            x = hi.logical_xor(lo) if x._value.dtype.kind == "b" else hi - lo
        return x

    def renorm(self: TensorT, p: Any, dim: builtins.int, maxnorm: Any) -> "TensorT":
        """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm``;
        differentiable. Example: ``ft.ones(2, 3).renorm(2, 0, 1.0)``."""
        if p <= 0:
            raise RuntimeError(f"renorm: non-positive-norm not supported")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if self.dim() <= 1:
            raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} dimensions")
        d = _dim(dim, self.dim())
        others = tuple(i for i in builtins.range(self.dim()) if i != d)
        norms = self.norm(p, dim=others, keepdim=True)
        factor = fnp.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
        return self * factor

    renorm_ = inplace_variant("renorm")


def _linspace(xp: Any, lo: float, hi: float, n: int, dtype: Any) -> Any:
    """``n`` points from ``lo`` to ``hi``, as PyTorch's ``linspace`` computes them (the first half stepped
    from ``lo``, the second from ``hi``), so that bin edges equal PyTorch's to the last bit."""
    i = xp.arange(n, dtype=np.float64)
    step = (hi - lo) / max(n - 1, 1)
    return xp.where(i < n // 2, lo + i * step, hi - (n - 1 - i) * step).astype(dtype)


def _bin_counts(raw: Any, lo: float, hi: float, bins: Any, weights: Any, edges: Any = None) -> Any:
    """Counts (or summed ``weights``) of the values of ``raw`` in ``bins`` (a number of equal bins over
    ``[lo, hi]``, or an array of edges), in ``raw``'s dtype; values outside ``[lo, hi]`` are left out, the
    last bin is closed. Equal bins are found as PyTorch does, by ``(x - lo) * bins / (hi - lo)`` (then moved
    by one where that lands beside the value's bin among ``edges``, when given: ``histogram``'s search)."""
    xp = namespace_of(raw)
    flat = raw.reshape(-1)
    if isinstance(bins, builtins.int):
        n = bins
        where = xp.floor((flat - lo) * n / (hi - lo)) if hi > lo else xp.zeros_like(flat)
        where = xp.clip(where, 0, n - 1).astype(np.int64)
        if edges is not None:
            where = where - (flat < edges[where]) + ((flat >= edges[where + 1]) & (where + 1 < n))
    else:
        n = bins.shape[0] - 1
        where = xp.searchsorted(bins, flat, side="right") - 1
    inside = (flat >= lo) & (flat <= hi)
    where = xp.clip(xp.where(inside, where, 0), 0, n - 1).astype(np.int64)
    w = inside.astype(raw.dtype) if weights is None else xp.where(inside, weights.reshape(-1), 0).astype(raw.dtype)
    return xp.bincount(where, weights=w, minlength=n).astype(raw.dtype)


def _quantile(t: TensorT, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool) -> "TensorT":
    op = "nanquantile" if ignore_nan else "quantile"
    if t._value.dtype.kind != "f":
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                         f"Got {interpolation}")
    scalar_q = not is_tensor(q)
    xp = namespace_of(t._value)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        qs = xp.asarray([q], dtype=t._value.dtype)
    else:
        if q.dim() > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype != t.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qs = xp.reshape(q._value, (-1,))
        if builtins.bool(((qs < 0) | (qs > 1)).any()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    if t.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    x, d = _rows_last(t, dim)
    ordered = x.sort(-1).values  # NaNs last
    n = x.shape[-1]
    nans = _is_nan(x._value)
    valid = xp.sum(~nans, axis=-1, keepdims=True) if ignore_nan else xp.full(x._value.shape[:-1] + (1,), n)
    qshape = (qs.shape[0],) + (1,) * x.dim()
    rank = xp.reshape(qs, qshape) * xp.maximum(valid - 1, 0)  # (Q, ..., 1)
    lo = xp.floor(rank)
    hi = xp.ceil(rank)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = xp.round(rank)  # (half to even, as PyTorch)
    rows = ordered.unsqueeze(0).expand(qs.shape[0], *ordered.shape)
    v_lo = rows.gather(-1, _index_tensor(lo))
    v_hi = rows.gather(-1, _index_tensor(hi))
    if interpolation == "midpoint":
        out = (v_lo + v_hi) * 0.5
    elif interpolation == "linear":  # (PyTorch's lerp: from the nearer end, so an infinite end stays infinite)
        w = new_tensor((rank - lo).astype(t._value.dtype))
        out = fnp.where(w < 0.5, v_lo + (v_hi - v_lo) * w, v_hi - (v_hi - v_lo) * (1 - w))
    else:
        out = v_lo
    undefined = (valid == 0) if ignore_nan else xp.any(nans, axis=-1, keepdims=True)
    out = fnp.where(xp.broadcast_to(undefined, out._value.shape), xp.nan, out).squeeze(-1)
    out = _keep(out, t, d, keepdim, lead=1)
    return out.squeeze(0) if scalar_q else out
