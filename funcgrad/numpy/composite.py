"""Composite NumPy functions: plain Python over other funcgrad.numpy functions.

Nothing here is a primitive and nothing registers a rule: each function is
written with existing ``funcgrad.numpy`` functions only, so derivatives of any
order, ``vmap`` and GPU arrays come from those functions. Index arithmetic
that depends only on shapes (window positions, kept indices) is computed with
NumPy on Python ints, never on array arguments.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.backend import device_constant, namespace_of
from funcgrad.core.trace import Box, contains_box

from ._util import normalize_axes as _axes

__all__ = [
    "append",
    "convolve",
    "corrcoef",
    "correlate",
    "cov",
    "delete",
    "diff",
    "divmod",
    "ediff1d",
    "gradient",
    "interp",
    "median",
    "modf",
    "nanmax",
    "nanmedian",
    "nanmin",
    "nanpercentile",
    "nanquantile",
    "nanstd",
    "nanvar",
    "percentile",
    "polyval",
    "quantile",
    "select",
    "trapezoid",
    "trapz",
    "vander",
]


# --------------------------------------------------------------------------
# helpers

def _to_last(a: Any, axis: Any) -> tuple[Any, tuple[int, ...]]:
    """Move the reduced ``axis`` of ``a`` to one trailing axis; returns it and the axes."""
    nd = fnp.ndim(a)
    axes = _axes(axis, nd)
    if axes == tuple(range(nd)):
        return fnp.reshape(a, (-1,)), axes
    rest = [i for i in range(nd) if i not in axes]
    shape = fnp.shape(a)
    moved = fnp.transpose(a, rest + list(axes))
    return fnp.reshape(moved, tuple(shape[i] for i in rest) + (-1,)), axes


def _keep(r: Any, axes: tuple[int, ...], nd: int, lead: int = 0) -> Any:
    """Reinsert the reduced ``axes`` as length-1 axes (after ``lead`` leading q axes)."""
    for ax in axes:
        r = fnp.expand_dims(r, lead + ax)
    return r


def _as_float(a: Any) -> Any:
    a = fnp.asarray(a) if not hasattr(a, "shape") else a
    if not fnp.issubdtype(fnp.result_type(a), np.inexact):
        a = fnp.astype(a, np.float64)
    return a


def _like(value: Any, *likes: Any) -> Any:
    """``value`` as an array; host data (Python numbers, lists, NumPy arrays) goes to the
    device of the first of ``likes`` that lives on one. Traced and device arrays pass."""
    if isinstance(value, Box) or (hasattr(value, "shape") and not isinstance(value, np.ndarray)):
        return value
    if type(value) in (list, tuple) and contains_box(value):
        return fnp.array(value)
    host = np.asarray(value)
    for like in likes:
        if like is not None and namespace_of(like) is not np:
            return device_constant(like, host)
    return host


def _slice_along(nd: int, axis: int, sl: slice) -> tuple[Any, ...]:
    idx = [slice(None)] * nd
    idx[axis] = sl
    return tuple(idx)


# --------------------------------------------------------------------------
# order statistics

_QUANTILE_METHODS = ("linear",)


def _quantile_core(a: Any, q: Any, axis: Any, keepdims: bool, method: str, ignore_nan: bool,
                   fname: str) -> Any:
    if method not in _QUANTILE_METHODS:
        raise NotImplementedError(
            f"{fname}: method={method!r} is not implemented; only method='linear' is supported")
    a = _as_float(a)
    nd = fnp.ndim(a)
    s, axes = _to_last(a, axis)
    rows = fnp.shape(s)[:-1]
    n = fnp.shape(s)[-1]
    if n == 0:
        raise ValueError(f"{fname}: cannot take a quantile of an empty axis")
    s = fnp.sort(s, axis=-1)  # nans sort last
    dt = fnp.result_type(s)
    q = _like(q, s)
    qshape = fnp.shape(q)
    qf = fnp.astype(fnp.reshape(q, (-1,)), dt) if fnp.result_type(q) != dt else fnp.reshape(q, (-1,))
    nans = fnp.isnan(s)
    if ignore_nan:
        count = fnp.sum(fnp.logical_not(nans), axis=-1, keepdims=True)      # rows + (1,)
        last = fnp.astype(fnp.maximum(count - 1, 0), dt)
    else:
        last = float(n - 1)
    pos = qf * last                                         # rows + (Q,) or (Q,)
    pos = fnp.broadcast_to(pos, rows + (fnp.shape(qf)[0],))
    lo_f = fnp.floor(pos)
    lo = fnp.astype(lo_f, np.intp)
    lo = fnp.clip(lo, 0, n - 1)
    hi = fnp.clip(lo + 1, 0, n - 1)
    frac = pos - lo_f
    v0 = fnp.take_along_axis(s, lo, axis=-1)
    v1 = fnp.take_along_axis(s, hi, axis=-1)
    # NumPy's lerp: a + (b - a) t, or b - (b - a)(1 - t) for t >= 1/2.
    d = v1 - v0
    r = fnp.where(frac >= 0.5, v1 - d * (1.0 - frac), v0 + d * frac)
    if ignore_nan:
        r = fnp.where(count == 0, np.nan, r)
    else:
        r = fnp.where(fnp.any(nans, axis=-1, keepdims=True), np.nan, r)
    # rows + (Q,) -> qshape + rows
    r = fnp.moveaxis(r, -1, 0)
    r = fnp.reshape(r, qshape + rows)
    if keepdims:
        r = _keep(r, axes, nd, lead=len(qshape))
    return r


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """``q``-th quantiles of ``a`` along ``axis``. Differentiable ``numpy.quantile``.

    Differentiable in ``a`` and ``q`` (away from ties). Only ``method='linear'``; no
    ``out`` or ``weights``. Sorts along the reduced axes (O(n log n)), like NumPy.
    """
    _no_out("quantile", out, weights)
    return _quantile_core(a, q, axis, keepdims, method, False, "quantile")


def percentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """``q``-th percentiles of ``a``. Differentiable ``numpy.percentile`` (see :func:`quantile`)."""
    _no_out("percentile", out, weights)
    return _quantile_core(a, _like(q, a) / 100.0, axis, keepdims, method, False, "percentile")


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """Quantiles ignoring nans. Differentiable ``numpy.nanquantile`` (zero gradient at nans)."""
    _no_out("nanquantile", out, weights)
    return _quantile_core(a, q, axis, keepdims, method, True, "nanquantile")


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """Percentiles ignoring nans. Differentiable ``numpy.nanpercentile``."""
    _no_out("nanpercentile", out, weights)
    return _quantile_core(a, _like(q, a) / 100.0, axis, keepdims, method, True, "nanpercentile")


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """Median along ``axis``. Differentiable ``numpy.median`` (nan if a slice holds a nan)."""
    _no_out("median", out)
    return _quantile_core(a, 0.5, axis, keepdims, "linear", False, "median")


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """Median ignoring nans. Differentiable ``numpy.nanmedian`` (zero gradient at nans)."""
    _no_out("nanmedian", out)
    return _quantile_core(a, 0.5, axis, keepdims, "linear", True, "nanmedian")


def _no_out(fname: str, out: Any, weights: Any = None) -> None:
    if out is not None:
        raise NotImplementedError(f"{fname}: out= is not supported (funcgrad arrays are immutable)")
    if weights is not None:
        raise NotImplementedError(f"{fname}: weights= is not supported")


# --------------------------------------------------------------------------
# nan reductions

def _nan_extreme(a: Any, axis: Any, keepdims: bool, fill: float, red: Any) -> Any:
    mask = fnp.isnan(a)
    r = red(fnp.where(mask, fill, a), axis=axis, keepdims=keepdims)
    return fnp.where(fnp.all(mask, axis=axis, keepdims=keepdims), np.nan, r)


def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Maximum ignoring nans. Differentiable ``numpy.nanmax`` (nan, without a warning, for
    an all-nan slice; zero gradient at nans)."""
    _no_out("nanmax", out)
    return _nan_extreme(a, axis, keepdims, -np.inf, fnp.max)


def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Minimum ignoring nans. Differentiable ``numpy.nanmin`` (see :func:`nanmax`)."""
    _no_out("nanmin", out)
    return _nan_extreme(a, axis, keepdims, np.inf, fnp.min)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0,
           keepdims: bool = False) -> Any:
    """Variance ignoring nans. Differentiable ``numpy.nanvar`` (zero gradient at nans)."""
    _no_out("nanvar", out)
    a = _as_float(a) if dtype is None else fnp.astype(a, dtype)
    mask = fnp.logical_not(fnp.isnan(a))
    a0 = fnp.where(mask, a, 0.0)          # zeroed before any arithmetic: no nan * 0 in the rules
    count = fnp.sum(mask, axis=axis, keepdims=True)
    count = fnp.astype(count, fnp.result_type(fnp.real(a0)))  # keep float32 float32
    mean = fnp.sum(a0, axis=axis, keepdims=True) / count
    d = fnp.where(mask, a0 - mean, 0.0)
    sq = d * fnp.conj(d) if fnp.iscomplexobj(d) else d * d
    ss = fnp.sum(sq, axis=axis, keepdims=keepdims)
    if fnp.iscomplexobj(ss):
        ss = fnp.real(ss)
    n = count if keepdims else fnp.squeeze(count, axis=_axes(axis, fnp.ndim(a)))
    dof = n - ddof
    return ss / fnp.where(dof > 0, dof, np.nan)  # NumPy: nan where no degrees of freedom are left


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0,
           keepdims: bool = False) -> Any:
    """Standard deviation ignoring nans. Differentiable ``numpy.nanstd``."""
    return fnp.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims))


# --------------------------------------------------------------------------
# differences and integrals

def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue) -> Any:
    """``n``-th discrete difference along ``axis``. Differentiable ``numpy.diff``."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    a = fnp.asarray(a) if not hasattr(a, "shape") else a
    nd = fnp.ndim(a)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    (axis,) = _axes(axis, nd)
    if n == 0:
        return a
    parts: list[Any] = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = _like(extra, a)
        if fnp.ndim(e) == 0:
            shape = list(fnp.shape(a))
            shape[axis] = 1
            e = fnp.broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        seq = ([parts[0]] if parts[0] is not None else []) + [a] + ([parts[1]] if parts[1] is not None else [])
        a = fnp.concatenate(seq, axis=axis)
    hi = _slice_along(nd, axis, slice(1, None))
    lo = _slice_along(nd, axis, slice(None, -1))
    boolean = fnp.result_type(a) == np.bool_
    for _ in range(n):
        a = fnp.not_equal(a[hi], a[lo]) if boolean else a[hi] - a[lo]
    return a


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of the flattened array. Differentiable ``numpy.ediff1d``."""
    ary = fnp.ravel(ary)
    d = ary[1:] - ary[:-1]
    seq = []
    if to_begin is not None:
        seq.append(fnp.astype(fnp.ravel(to_begin), fnp.result_type(d)))
    seq.append(d)
    if to_end is not None:
        seq.append(fnp.astype(fnp.ravel(to_end), fnp.result_type(d)))
    return fnp.concatenate(seq) if len(seq) > 1 else d


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """Numerical gradient by central differences. Differentiable ``numpy.gradient``.

    Spacings must be scalars (one for all axes or one per axis); coordinate
    arrays are not supported.
    """
    f = _as_float(f)
    nd = fnp.ndim(f)
    axes = _axes(axis, nd) if axis is not None else tuple(range(nd))
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (_axes(axis, nd)[0],)
    elif axis is not None:
        axes = tuple(operator.index(ax) % nd for ax in axis)
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(f"gradient: expected 0, 1 or {len(axes)} spacings, got {len(varargs)}")
    for h in spacing:
        if fnp.ndim(h) != 0:
            raise NotImplementedError("gradient: only scalar spacings are supported, not coordinate arrays")
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    out = []
    for ax, h in zip(axes, spacing):
        m = fnp.shape(f)[ax]
        if m < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")

        def s(sl: slice, ax: int = ax) -> Any:
            return f[_slice_along(nd, ax, sl)]

        interior = (s(slice(2, None)) - s(slice(None, -2))) / (2.0 * h)
        if edge_order == 1:
            first = (s(slice(1, 2)) - s(slice(0, 1))) / h
            last = (s(slice(-1, None)) - s(slice(-2, -1))) / h
        else:
            first = (-1.5 * s(slice(0, 1)) + 2.0 * s(slice(1, 2)) - 0.5 * s(slice(2, 3))) / h
            last = (0.5 * s(slice(-3, -2)) - 2.0 * s(slice(-2, -1)) + 1.5 * s(slice(-1, None))) / h
        out.append(fnp.concatenate([first, interior, last], axis=ax))
    return out[0] if len(out) == 1 else tuple(out)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """Integral by the trapezoidal rule. Differentiable ``numpy.trapezoid`` in ``y``, ``x`` and ``dx``."""
    y = fnp.asarray(y) if not hasattr(y, "shape") else y
    nd = fnp.ndim(y)
    (axis,) = _axes(axis, nd)
    if x is None:
        d = dx
    else:
        x = fnp.asarray(x) if not hasattr(x, "shape") else x
        d = diff(x, axis=axis if fnp.ndim(x) > 1 else -1)
        if fnp.ndim(x) == 1:
            shape = [1] * nd
            shape[axis] = fnp.shape(d)[0]
            d = fnp.reshape(d, tuple(shape))
    hi = y[_slice_along(nd, axis, slice(1, None))]
    lo = y[_slice_along(nd, axis, slice(None, -1))]
    return fnp.sum(d * (hi + lo) / 2.0, axis=axis)


trapz = trapezoid


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """Piecewise-linear interpolation. Differentiable ``numpy.interp`` in ``x``, ``xp`` and ``fp``.

    ``xp`` must be 1-D and increasing; ``period`` is not supported. Unlike NumPy (always
    float64) the result keeps the inputs' precision: float32 in, float32 out.
    """
    if period is not None:
        raise NotImplementedError("interp: period= is not supported")
    xp = fnp.asarray(xp) if not hasattr(xp, "shape") else xp
    fp = fnp.asarray(fp) if not hasattr(fp, "shape") else fp
    if fnp.ndim(xp) != 1 or fnp.ndim(fp) != 1:
        raise ValueError("interp: xp and fp must be 1-D sequences")
    m = fnp.shape(xp)[0]
    if fnp.shape(fp)[0] != m:
        raise ValueError(f"interp: fp and xp are not of the same length ({fnp.shape(fp)[0]} and {m})")
    if m == 0:
        raise ValueError("interp: array of sample points is empty")
    x = _as_float(x)
    if m == 1:
        y = fnp.broadcast_to(fp[0], fnp.shape(x))
        lo_v, hi_v = fp[0], fp[0]
    else:
        i = fnp.clip(fnp.searchsorted(xp, x, side="right") - 1, 0, m - 2)
        x0, x1 = fnp.take(xp, i, axis=0), fnp.take(xp, i + 1, axis=0)
        y0, y1 = fnp.take(fp, i, axis=0), fnp.take(fp, i + 1, axis=0)
        t = (x - x0) / (x1 - x0)
        y = y0 + t * (y1 - y0)
        lo_v, hi_v = fp[0], fp[-1]
    y = fnp.where(x < xp[0], lo_v if left is None else left, y)
    y = fnp.where(x > xp[-1], hi_v if right is None else right, y)
    if m > 1:
        y = fnp.where(x == xp[-1], fp[-1], y)
    return y


# --------------------------------------------------------------------------
# selection, polynomials, convolution

def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """First choice whose condition holds, else ``default``. Differentiable ``numpy.select``."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError("select: list[Any] of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    for k, c in enumerate(condlist):
        if fnp.result_type(c) != np.bool_:
            raise TypeError(f"select: invalid entry {k} in condlist: should be boolean ndarray")
    result = default
    for c, v in zip(reversed(condlist), reversed(choicelist)):
        result = fnp.where(c, v, result)
    shape = fnp.broadcast_shapes(*[fnp.shape(c) for c in condlist], *[fnp.shape(v) for v in choicelist])
    if fnp.shape(result) != shape:
        result = fnp.broadcast_to(result, shape)
    return result


def polyval(p: Any, x: Any) -> Any:
    """Polynomial ``p[0] x**(n-1) + ... + p[-1]`` by Horner's rule. Differentiable ``numpy.polyval``."""
    p, x = _like(p, x), _like(x, p)
    y = fnp.zeros_like(x, dtype=fnp.result_type(p, x))
    for k in range(fnp.shape(p)[0]):
        y = y * x + p[k]
    return y


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """Vandermonde matrix. Differentiable ``numpy.vander`` (powers by repeated products)."""
    x = fnp.asarray(x) if not hasattr(x, "shape") else x
    if fnp.ndim(x) != 1:
        raise ValueError("vander: x must be a one-dimensional array or sequence")
    N = fnp.shape(x)[0] if N is None else operator.index(N)
    cols = []
    if N > 0:
        cols.append(fnp.ones_like(x))
    for _ in range(1, N):
        cols.append(cols[-1] * x)
    if not cols:
        return fnp.zeros((fnp.shape(x)[0], 0), dtype=fnp.result_type(x))
    if not increasing:
        cols = cols[::-1]
    return fnp.stack(cols, axis=1)


def _full_convolve(a: Any, v: Any) -> Any:
    """Full 1-D convolution as a gather of sliding windows of the padded ``a`` times ``v``."""
    n, m = fnp.shape(a)[0], fnp.shape(v)[0]
    a_pad = fnp.pad(a, (m - 1, m - 1))
    idx = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]   # shape-only index arithmetic
    windows = fnp.take(a_pad, idx, axis=0)                           # (n + m - 1, m)
    return fnp.matmul(windows, fnp.flip(v, axis=0))


def _mode_slice(full: Any, n: int, m: int, mode: str, fname: str) -> Any:
    if mode == "full":
        return full
    lo, hi = min(n, m), max(n, m)
    if mode == "same":
        start = (lo - 1) // 2
        return full[start:start + hi]
    if mode == "valid":
        return full[lo - 1:hi]
    raise ValueError(f"{fname}: mode must be 'full', 'same' or 'valid', got {mode!r}")


def _check_1d(fname: str, a: Any, v: Any) -> tuple[Any, Any]:
    a = fnp.asarray(a) if not hasattr(a, "shape") else a
    v = fnp.asarray(v) if not hasattr(v, "shape") else v
    if fnp.ndim(a) == 0:
        a = fnp.reshape(a, (1,))
    if fnp.ndim(v) == 0:
        v = fnp.reshape(v, (1,))
    if fnp.ndim(a) != 1 or fnp.ndim(v) != 1:
        raise ValueError(f"{fname}: a and v must be 1-D, got shapes {fnp.shape(a)} and {fnp.shape(v)}")
    if fnp.shape(a)[0] == 0:
        raise ValueError(f"{fname}: a cannot be empty")
    if fnp.shape(v)[0] == 0:
        raise ValueError(f"{fname}: v cannot be empty")
    return a, v


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """Discrete linear convolution of two 1-D arrays. Differentiable ``numpy.convolve``."""
    a, v = _check_1d("convolve", a, v)
    n, m = fnp.shape(a)[0], fnp.shape(v)[0]
    full = _full_convolve(a, v) if n >= m else _full_convolve(v, a)
    return _mode_slice(full, n, m, mode, "convolve")


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """Cross-correlation ``c[k] = sum_n a[n + k] conj(v[n])``. Differentiable ``numpy.correlate``."""
    a, v = _check_1d("correlate", a, v)
    if fnp.iscomplexobj(v):
        v = fnp.conj(v)
    n, m = fnp.shape(a)[0], fnp.shape(v)[0]
    if n >= m:
        return _mode_slice(_full_convolve(a, fnp.flip(v, axis=0)), n, m, mode, "correlate")
    # NumPy swaps the operands when v is longer and reverses the result ('same' centres differently)
    return fnp.flip(_mode_slice(_full_convolve(v, fnp.flip(a, axis=0)), m, n, mode, "correlate"), axis=0)


# --------------------------------------------------------------------------
# statistics

def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """Covariance matrix. Differentiable ``numpy.cov`` (no ``fweights``/``aweights``)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights= and aweights= are not supported")
    m = fnp.asarray(m) if not hasattr(m, "shape") else m
    if fnp.ndim(m) > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    X = fnp.atleast_2d(m)
    if not rowvar and fnp.shape(X)[0] != 1:
        X = fnp.transpose(X)
    if y is not None:
        y = fnp.asarray(y) if not hasattr(y, "shape") else y
        if fnp.ndim(y) > 2:
            raise ValueError("cov: y has more than 2 dimensions")
        Y = fnp.atleast_2d(y)
        if not rowvar and fnp.shape(Y)[0] != 1:
            Y = fnp.transpose(Y)
        X = fnp.concatenate([X, Y], axis=0)
    X = _as_float(X) if dtype is None else fnp.astype(X, dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = fnp.shape(X)[1] - ddof
    Xc = X - fnp.mean(X, axis=1, keepdims=True)
    Xh = fnp.conj(Xc) if fnp.iscomplexobj(Xc) else Xc
    c = fnp.matmul(Xc, fnp.transpose(Xh)) / float(fact)
    return fnp.squeeze(c)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """Pearson correlation coefficients. Differentiable ``numpy.corrcoef``.

    Unlike NumPy the result is not clipped to [-1, 1] (the clip is only a guard
    against rounding, and would put a kink in the derivative).
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if fnp.ndim(c) == 0:
        return c / c
    d = fnp.real(fnp.diagonal(c)) if fnp.iscomplexobj(c) else fnp.diagonal(c)
    sd = fnp.sqrt(d)
    return c / sd[:, None] / sd[None, :]


# --------------------------------------------------------------------------
# array manipulation

def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` appended to ``arr``. Differentiable ``numpy.append``."""
    if axis is None:
        return fnp.concatenate([fnp.ravel(arr), fnp.ravel(values)])
    return fnp.concatenate([arr, values], axis=axis)


def delete(arr: Any, obj: Any, axis: int | None = None) -> Any:
    """``arr`` without the entries ``obj`` along ``axis``. Differentiable ``numpy.delete``.

    ``obj`` (int, slice, sequence of ints or boolean mask) is index data, not traced.
    """
    arr = fnp.asarray(arr) if not hasattr(arr, "shape") else arr
    if axis is None:
        arr = fnp.ravel(arr)
        axis = 0
    (axis,) = _axes(axis, fnp.ndim(arr))
    n = fnp.shape(arr)[axis]
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        o = np.asarray(obj)
        if o.dtype == bool:
            if o.shape != (n,):
                raise ValueError(f"delete: boolean obj must have shape ({n},), got {o.shape}")
            keep &= ~o
        else:
            if o.size and (o.min() < -n or o.max() >= n):
                raise IndexError(f"delete: index out of bounds for axis {axis} with size {n}")
            keep[o.astype(np.intp)] = False
    return fnp.take(arr, np.flatnonzero(keep), axis=axis)


# --------------------------------------------------------------------------
# elementwise pairs

def divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    """``(floor_divide(x1, x2), mod(x1, x2))``. Differentiable ``numpy.divmod`` (the quotient is piecewise constant)."""
    return fnp.floor_divide(x1, x2), fnp.mod(x1, x2)


def modf(x: Any) -> tuple[Any, Any]:
    """Fractional and integral parts, with the sign of ``x``. Differentiable ``numpy.modf``."""
    x = _as_float(x)
    i = fnp.trunc(x)
    return x - i, i
