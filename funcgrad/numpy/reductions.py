"""Reductions and scans (sum, mean, prod, max, var, cumsum, sort, ...) and their rules.

Every public function mirrors the NumPy function of the same name (``axis`` as
None, an int, a negative int or a tuple; ``keepdims``; ``dtype`` where NumPy
has it) and is a primitive whose VJP and JVP sit next to it. Rules are written
in funcgrad.numpy, so they differentiate again, to any order.

Semantics at the points where a reduction is not differentiable follow JAX
and are chosen so that no rule divides by an input:

* ``prod`` / ``cumprod``: the derivative is the product of the *other*
  factors, computed with exclusive scans, never ``prod / x``; exact with one
  or several zeros, and to any order.
* ``max`` / ``min`` / ``amax`` / ``amin`` / ``ptp``: tied extrema share the
  derivative equally (each of ``k`` ties gets ``1/k``).
* ``std``: at a constant slice the derivative is 0 (the smallest
  subgradient), also when rounding makes the computed std tiny but non-zero;
  never nan (a ``sqrt(var)`` rule, as in JAX, gives nan there).
* ``sort``: the cotangent is scattered back through the sorting permutation;
  tied values each take the cotangent of the slot they were sorted into.

``out=`` is not supported (functional code returns new arrays); ``where=`` is
supported by ``sum`` and ``mean``, ``initial=`` by ``sum``, ``prod``, ``max``
and ``min``.
"""

from __future__ import annotations

import builtins
import inspect
import operator
from typing import Any, Callable, Protocol

import numpy as np

import funcgrad.numpy as fnp

from ..backend import _NAMESPACE_BY_TYPE, namespace_of
from ..core import defprimitive
from ..core.declare import front_of
from ._batching import fallback, move_to_front
from ._batching import batch_size as _batch_size, front as _front
from ._typing import Array, ArrayLike, Axis, DTypeLike
from ._util import _normalize_axis_tuple, _value, dtype as _dtype, is_complex, normalize_axes as _axes, shape  # type: ignore[attr-defined]

__all__ = [
    "sum", "mean", "prod", "max", "min", "amax", "amin", "ptp", "var", "std", "average",
    "cumsum", "cumprod", "sort", "nansum", "nanmean",
]

_bmax = builtins.max


# --------------------------------------------------------------------------
# helpers (static shape logic only; everything on arrays goes through fnp)


def _count(x: Any, axes: tuple[int, ...]) -> int:
    s = shape(x)
    n = 1
    for a in axes:
        n *= s[a]
    return n


def _expand(g: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """Give a reduced value back its reduced axes (as length 1) so it broadcasts."""
    if keepdims or not axes:
        return g
    return fnp.expand_dims(g, axes)


def _like(ct: Any, x: Any) -> Any:
    """Cast a cotangent to the dtype of ``x`` (when a ``dtype=`` argument changed it)."""
    target = _dtype(x)
    if fnp.result_type(ct) == target:
        return ct
    if is_complex(ct) and target.kind != "c":
        ct = fnp.real(ct)
    return fnp.astype(ct, target)


def _to(t: Any, dt: Any) -> Any:
    """Cast a tangent to the dtype ``dt`` of the primitive's output."""
    if fnp.result_type(t) == dt:
        return t
    return fnp.astype(t, dt)


def _no_out(out: Any, name: str) -> None:
    if out is not None:
        raise TypeError(
            f"funcgrad.numpy.{name} does not support out=: funcgrad functions return new "
            f"arrays (write `y = fnp.{name}(...)` instead)"
        )


def _ns(a: Any) -> Any:
    """The array namespace of ``a`` (one dict lookup for NumPy arrays)."""
    return _NAMESPACE_BY_TYPE.get(type(a)) or namespace_of(a)


def _opt(**kwargs: Any) -> dict[Any, Any]:
    """The optional keyword arguments that were given (NumPy's own defaults otherwise)."""
    return {k: v for k, v in kwargs.items() if v is not None}


def _mask(b: Any, like: Any) -> Any:
    """A boolean array as 0/1 in the dtype of ``like`` (a constant: no derivative)."""
    return fnp.astype(b, _dtype(like))


# --------------------------------------------------------------------------
# batching (vmap; jacfwd/jacrev/hessian batch the rules below too)
#
# A rule gets the primitive's positional arguments with this vmap's boxes
# removed and ``dims[i]``, the batch axis of ``args[i]`` (None: not batched).
# It moves the batch axis to the front and shifts the per-example ``axis``
# past it. Rules pass every parameter on positionally: an array parameter
# (``where``, ``initial``, a scan's coefficients) travels where the traces
# see it, so another vmap that batches it gets its turn.


def _front_aligned(x: Any, d: int, per: int) -> Any:
    """Batched ``x`` with its batch axis first and unit axes after it, so that
    its example part (right-aligned, as NumPy broadcasts) has rank ``per``."""
    x = move_to_front(x, d)
    s = shape(x)
    if len(s) - 1 < per:
        x = fnp.reshape(x, s[:1] + (1,) * (per - len(s) + 1) + tuple(s[1:]))
    return x


def _batch_axes(axis: Any, per: int) -> tuple[int, ...]:
    """A reduction's per-example ``axis`` for an array with a leading batch axis
    (None reduces every axis of the example, never the batch axis)."""
    return tuple(a + 1 for a in _axes(axis, per))


def _batch_axis(axis: Any, per: int) -> int:
    """A scan's per-example int ``axis`` for an array with a leading batch axis."""
    return _axes(axis, per)[0] + 1


def _bind(names: tuple[Any, ...], defaults: tuple[Any, ...], args: list[Any], dims: list[Any],
          kwargs: dict[Any, Any]) -> tuple[list[Any], list[Any], dict[Any, Any]]:
    """All of ``names`` as positional values (and their batch dims); keyword
    arguments not in ``names`` (keyword-only ones) are returned apart."""
    vals = list(args) + list(defaults[len(args):])
    dims = list(dims) + [None] * (len(names) - len(dims))
    rest = {}
    for k, v in kwargs.items():
        if k in names:
            vals[names.index(k)] = v
        else:
            rest[k] = v
    return vals, dims, rest


def _reduction_batch(fn: Any, scan: bool = False) -> Any:
    """Batching rule of the reduction (or, with ``scan``, cumulative) primitive ``fn``.

    Its positional parameters (the array first, ``axis`` among them) are read off its
    raw function. A batched ``where`` mask is vectorized; a batched ``initial`` (a
    per-example scalar) falls back to a loop over the batch.
    """
    prim = fn.primitive
    params = [p for p in inspect.signature(prim.raw).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = tuple(p.name for p in params)
    defaults = tuple(None if p.default is p.empty else p.default for p in params)
    i_axis = names.index("axis")
    i_where = names.index("where") if "where" in names else None

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        vals, dims, rest = _bind(names, defaults, args, dims, kwargs)
        size = _batch_size(vals, dims)
        others = [i for i, d in enumerate(dims) if d is not None and i not in (0, i_where)]
        if others:  # e.g. a batched ``initial``: NumPy takes one scalar per call
            return fallback(prim, vals, dims, size, rest)
        a, d = vals[0], dims[0]
        if d is None:  # only the mask is batched; ``a`` may be a list or a scalar
            a = fnp.asarray(a)
        per = len(shape(a)) - (d is not None)
        if i_where is not None and dims[i_where] is not None:
            a = _front(a, d, size)  # the result's shape follows ``a``
            vals[i_where] = _front_aligned(vals[i_where], dims[i_where], per)
        else:
            a = move_to_front(a, d)
        vals[0] = a
        axis = vals[i_axis]
        if scan:
            if axis is None:  # flatten each example, as NumPy's scans do
                vals[0] = fnp.reshape(a, (size, -1))
                vals[i_axis] = 1
            else:
                vals[i_axis] = _batch_axis(axis, per)
        else:
            vals[i_axis] = _batch_axes(axis, per)
        return fn(*vals, **rest), 0

    return rule


def _scan_batch(fn: Any) -> Any:
    """Batching rule of a cumulative primitive (cumsum, sort ...): ``axis=None`` flattens."""
    return _reduction_batch(fn, scan=True)


# --------------------------------------------------------------------------
# sum, mean (linear)


def _sum_raw(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             initial: Any = None, where: Any = None) -> Any:
    if out is not None:
        _no_out(out, "sum")
    if initial is None and where is None:
        return _ns(a).sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return _ns(a).sum(a, axis=axis, dtype=dtype, keepdims=keepdims, **_opt(initial=initial, where=where))


def _sum_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: Any = False, initial: Any = None, where: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    ct = _expand(g, axes, keepdims)
    if shape(ct) != shape(a):
        ct = fnp.broadcast_to(ct, shape(a))
    if where is not None:
        ct = ct * _mask(where, ct)
    return _like(ct, a) if dtype is not None else ct


def _sum_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: Any = False, initial: Any = None, where: Any = None) -> Any:
    return sum(t, axis, dtype, None, keepdims, None, where)  # ``initial`` adds a constant


def _initial_vjp(g: Any, initial: Any) -> Any:
    """Cotangent of the scalar ``initial`` from a cotangent ``g`` of every output."""
    return _like(sum(g) if shape(g) else g, initial)


_sum = defprimitive(
    _sum_raw,
    name="sum",
    vjp={0: _sum_vjp, 5: lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
         where=None: _initial_vjp(g, initial)},
    jvp={0: _sum_jvp, 5: lambda t, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
         where=None: _to(fnp.broadcast_to(t, shape(ans)), _dtype(ans))},
    batch_from=_reduction_batch,
    reads={0: {1, 2, 3, 4, 6}, 5: {1, 2, 3, 4, 6}},  # not the values of a, initial or the result
)


@front_of(_sum)
def sum(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    """Sum of array elements over the given axes. Differentiable ``numpy.sum``.

    Differentiable in ``a`` and in ``initial``. ``where`` (a boolean mask) and
    ``initial`` may be traced or batched values: they are passed to the
    primitive positionally, where every transform sees them.

    Example::

        fg.grad(lambda x: fnp.sum(x ** 2, axis=0).sum())(fnp.ones(3))   # [2., 2., 2.]
    """
    if out is None:
        return _sum(a, axis, dtype, None, keepdims, initial, where)
    return _sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def _mean_raw(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
              where: Any = None) -> Any:
    if out is not None:
        _no_out(out, "mean")
    if where is None:
        return _ns(a).mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return _ns(a).mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)


def _mean_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
              keepdims: Any = False, where: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    ct = _expand(g, axes, keepdims)
    if where is None:
        ct = fnp.broadcast_to(ct, shape(a)) if shape(ct) != shape(a) else ct
        ct = ct / _count(a, axes) if axes else ct
    else:
        w = fnp.broadcast_to(_mask(where, ct), shape(a))
        ct = ct * w / sum(w, axis=axes, keepdims=True)
    return _like(ct, a) if dtype is not None else ct


_mean = defprimitive(
    _mean_raw,
    name="mean",
    vjp=_mean_vjp,
    linear=True,
    batch_from=_reduction_batch,
    reads={0: {1, 2, 3, 4, 5}},  # only the shape and dtype of ``a``
)


@front_of(_mean)
def mean(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
         where: Any = None) -> Any:
    """Arithmetic mean over the given axes. Differentiable ``numpy.mean``.

    ``where`` (a boolean mask) may be a traced or batched value.

    Example::

        fg.grad(lambda x: fnp.mean(x))(fnp.ones(4))   # [0.25, 0.25, 0.25, 0.25]
    """
    if out is None:
        return _mean(a, axis, dtype, None, keepdims, where)
    return _mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)


# --------------------------------------------------------------------------
# private scan primitives used by the rules of prod / cumprod / cumsum / sort


def _along(nd: int, axis: int, sl: slice) -> tuple[Any, ...]:
    idx = [slice(None)] * nd
    idx[axis] = sl
    return tuple(idx)


def _shift_raw(x: Any, offset: Any, axis: Any, fill: Any = 0.0) -> Any:
    """``y[i] = x[i - offset]`` along ``axis``; positions with no source get ``fill``."""
    xp = namespace_of(x)
    out = xp.full_like(x, fill)
    n = x.shape[axis]
    if abs(offset) < n:
        if offset >= 0:
            out[_along(x.ndim, axis, slice(offset, None))] = x[_along(x.ndim, axis, slice(None, n - offset))]
        else:
            out[_along(x.ndim, axis, slice(None, n + offset))] = x[_along(x.ndim, axis, slice(-offset, None))]
    return out


def _shift_batch(args: Any, dims: Any, fill: Any = 0.0) -> Any:
    x, offset, axis = args[:3]
    fill = args[3] if len(args) > 3 else fill
    per = len(shape(x)) - 1
    return _shift(move_to_front(x, dims[0]), offset, _batch_axis(axis, per), fill), 0


_shift: Callable[..., Any] = defprimitive(
    _shift_raw, name="shift", vjp=lambda g, ans, x, offset, axis, fill=0.0: _shift(g, -offset, axis, 0.0),
    jvp=lambda t, ans, x, offset, axis, fill=0.0: _shift(t, offset, axis, 0.0), batch=_shift_batch,
)


def _linrec_raw(a: Any, b: Any, axis: Any, reverse: Any = False) -> Any:
    """The linear recurrence ``h[i] = a[i] * h[i-1] + b[i]`` along ``axis`` (``h[-1] = 0``).

    With ``reverse`` it runs the other way: ``h[i] = a[i] * h[i+1] + b[i]``.
    A log-depth (Hillis-Steele) scan: O(n log n) multiplies, no division.
    """
    xp = namespace_of(a, b)
    dt = np.result_type(a.dtype, b.dtype)
    if reverse:
        a, b = xp.flip(a, axis), xp.flip(b, axis)
    A = a.astype(dt, copy=True)
    B = b.astype(dt, copy=True)
    n, nd, d = A.shape[axis], A.ndim, 1
    while d < n:
        hi, lo = _along(nd, axis, slice(d, None)), _along(nd, axis, slice(None, n - d))
        B[hi] = B[hi] + A[hi] * B[lo]
        if 2 * d < n:
            A[hi] = A[hi] * A[lo]
        d *= 2
    return xp.flip(B, axis) if reverse else B


# h = L b with L[i, k] = prod(a[k+1 .. i]) (forward); the transpose runs the
# recurrence the other way with the coefficients shifted by one.
def _linrec_vjp_b(g: Any, ans: Any, a: Any, b: Any, axis: Any, reverse: Any = False) -> Any:
    return _linrec(_shift(a, 1 if reverse else -1, axis), g, axis, not reverse)


def _linrec_vjp_a(g: Any, ans: Any, a: Any, b: Any, axis: Any, reverse: Any = False) -> Any:
    step = -1 if reverse else 1
    return _shift(ans, step, axis) * _linrec(_shift(a, -step, axis), g, axis, not reverse)


def _linrec_jvp_a(t: Any, ans: Any, a: Any, b: Any, axis: Any, reverse: Any = False) -> Any:
    return _linrec(a, t * _shift(ans, -1 if reverse else 1, axis), axis, reverse)


def _linrec_batch(args: Any, dims: Any, reverse: Any = False) -> Any:
    a, b, axis = args[:3]
    reverse = args[3] if len(args) > 3 else reverse
    size = _batch_size(args, dims)
    per = len(shape(a)) - (dims[0] is not None)  # a and b have the same example shape
    return _linrec(_front(a, dims[0], size), _front(b, dims[1], size), _batch_axis(axis, per), reverse), 0


_linrec: Callable[..., Any] = defprimitive(
    _linrec_raw, name="linrec", vjp=(_linrec_vjp_a, _linrec_vjp_b),
    jvp=(_linrec_jvp_a, lambda t, ans, a, b, axis, reverse=False: _linrec(a, t, axis, reverse)),
    batch=_linrec_batch,
)


def _rcumprod_raw(x: Any, axis: Any) -> Any:
    """``y[i] = prod(x[i:])`` along ``axis``."""
    xp = namespace_of(x)
    return xp.flip(xp.cumprod(xp.flip(x, axis), axis=axis), axis)


def _rcumprod_vjp(g: Any, ans: Any, x: Any, axis: Any) -> Any:
    # d y[k] / d x[i] = prod(x[j] for j >= k, j != i) for i >= k
    return _shift(ans, -1, axis, 1.0) * _linrec(_shift(x, 1, axis), g, axis, False)


def _axis_param_batch(fn: Any) -> Any:
    """Rule for ``fn(x, axis)`` (a scan along one per-example axis)."""

    def rule(args: Any, dims: Any) -> Any:
        x, axis = args
        return fn(move_to_front(x, dims[0]), _batch_axis(axis, len(shape(x)) - 1)), 0

    return rule


_rcumprod = defprimitive(
    _rcumprod_raw, name="rcumprod", vjp=_rcumprod_vjp,
    jvp=lambda t, ans, x, axis: _linrec(x, t * _shift(ans, -1, axis, 1.0), axis, True),
    batch_from=lambda fn: _axis_param_batch(fn),
)


def _rcumsum_raw(x: Any, axis: Any) -> Any:
    """``y[i] = sum(x[i:])`` along ``axis``."""
    xp = namespace_of(x)
    return xp.flip(xp.cumsum(xp.flip(x, axis), axis=axis), axis)


def _permute_raw(x: Any, idx: Any, axis: Any) -> Any:
    """``take_along_axis(x, idx, axis)`` for ``idx`` a permutation along ``axis``."""
    return namespace_of(x).take_along_axis(x, idx, axis=axis)


def _permute_batch(args: Any, dims: Any) -> Any:
    x, idx, axis = args
    size = _batch_size(args, dims)
    per = len(shape(x)) - (dims[0] is not None)
    # both broadcast to the batch: take_along_axis needs equal shapes on every backend,
    # and the VJP w.r.t. x (a permutation of g) must come out shaped like x
    return _permute(_front(x, dims[0], size), _front(idx, dims[1], size), _batch_axis(axis, per)), 0


_permute: Callable[..., Any] = defprimitive(
    _permute_raw, name="permute",
    vjp=lambda g, ans, x, idx, axis: _permute(g, fnp.argsort(idx, axis=axis), axis), linear=True,
    batch=_permute_batch,
)


def _others(x: Any, axes: tuple[int, ...]) -> Any:
    """``prod`` over ``axes`` of every element but the one in each position (no division).

    This is the derivative of ``prod(x, axes)`` w.r.t. each ``x[i]``. Along one
    axis it is (exclusive product from the left) * (exclusive product from the
    right); over several axes the chain rule through ``prod`` one axis at a
    time gives ``others_a(x) * others_rest(prod(x, a))``.
    """
    if not axes:
        return fnp.ones_like(x)
    a, rest = axes[0], axes[1:]
    left = _shift(cumprod(x, axis=a), 1, a, 1.0)
    right = _shift(_rcumprod(x, a), -1, a, 1.0)
    out = left * right
    if rest:
        out = out * _others(prod(x, axis=a, keepdims=True), rest)
    return out


# --------------------------------------------------------------------------
# prod


def _prod_raw(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
              initial: Any = None) -> Any:
    if out is not None:
        _no_out(out, "prod")
    if initial is None:
        return _ns(a).prod(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return _ns(a).prod(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)


def _prod_factor(a: Any, axes: Any, initial: Any) -> Any:
    f = _others(a, axes)
    return f if initial is None else f * initial


def _prod_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
              keepdims: Any = False, initial: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    return _like(_expand(g, axes, keepdims) * _prod_factor(a, axes, initial), a)


def _prod_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
              keepdims: Any = False, initial: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    return _to(sum(t * _prod_factor(a, axes, initial), axis=axes, dtype=dtype, keepdims=keepdims), _dtype(ans))


def _prod_vjp_initial(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                      keepdims: Any = False, initial: Any = None) -> Any:
    return _initial_vjp(g * prod(a, axis, dtype, None, keepdims), initial)


def _prod_jvp_initial(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                      keepdims: Any = False, initial: Any = None) -> Any:
    return _to(t * prod(a, axis, dtype, None, keepdims), _dtype(ans))


_prod = defprimitive(
    _prod_raw, name="prod", vjp={0: _prod_vjp, 5: _prod_vjp_initial},
    jvp={0: _prod_jvp, 5: _prod_jvp_initial}, batch_from=_reduction_batch,
)


@front_of(_prod)
def prod(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         initial: Any = None) -> Any:
    """Product of array elements over the given axes. Differentiable ``numpy.prod``.

    The derivative is the product of the other factors, computed without
    dividing by ``a``: exact when ``a`` has zeros, and to any order.
    Differentiable in ``initial`` too, which may be a traced or batched value.

    Example::

        fg.grad(fnp.prod)(fnp.array([0., 2., 3.]))   # [6., 0., 0.]
    """
    if out is None:
        return _prod(a, axis, dtype, None, keepdims, initial)
    return _prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial)


# --------------------------------------------------------------------------
# max, min: ties share the derivative equally


class _Chooser(Protocol):
    def __call__(self, a: ArrayLike, axis: Axis = None, out: Any = None, keepdims: bool = False,
                 initial: Any = None) -> Array: ...


def _chooser(name: str, doc: str) -> _Chooser:
    def raw(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False, initial: Any = None) -> Any:
        if out is not None:
            _no_out(out, name)
        fn = getattr(_ns(a), name)
        if initial is None:
            return fn(a, axis=axis, keepdims=keepdims)
        return fn(a, axis=axis, keepdims=keepdims, initial=initial)

    raw.__doc__ = doc

    def locations(ans: Any, a: Any, axis: Any, keepdims: Any) -> Any:
        """0/1 at the positions of the extremum, and their count per output (at least 1)."""
        axes = _axes(axis, len(shape(a)))
        where = _mask(fnp.equal(a, _expand(ans, axes, keepdims)), a)
        count = sum(where, axis=axes, keepdims=True)
        # ``initial`` may beat every element: no location, zero derivative.
        return axes, where, count + _mask(fnp.equal(count, 0), count)

    def vjp(g: Any, ans: Any, a: Any, axis: Any = None, out: Any = None, keepdims: Any = False,
            initial: Any = None) -> Any:
        axes, where, count = locations(ans, a, axis, keepdims)
        return _expand(g, axes, keepdims) * (where / count)

    def jvp(t: Any, ans: Any, a: Any, axis: Any = None, out: Any = None, keepdims: Any = False,
            initial: Any = None) -> Any:
        axes, where, count = locations(ans, a, axis, keepdims)
        tt = sum(t * where, axis=axes, keepdims=True) / count
        return tt if keepdims or not axes else fnp.reshape(tt, shape(ans))

    prim = defprimitive(  # ``initial`` is a constant: a traced one raises (no rule)
        raw, name=name, vjp=vjp, jvp=jvp,
        batch_from=_reduction_batch,
    )

    def public(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False, initial: Any = None) -> Any:
        if out is None:
            return prim(a, axis, None, keepdims, initial)
        return prim(a, axis=axis, out=out, keepdims=keepdims, initial=initial)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc
    return front_of(prim)(public)


max = _chooser("max", """Maximum over the given axes. Differentiable ``numpy.max``.

    Tied maxima share the derivative equally (as in JAX): each of ``k`` tied
    elements gets ``1/k`` of the cotangent.

    Example::

        fg.grad(fnp.max)(fnp.array([1., 3., 3.]))   # [0., 0.5, 0.5]
    """)  # noqa: A001 - mirrors numpy
min = _chooser("min", """Minimum over the given axes. Differentiable ``numpy.min``.

    Tied minima share the derivative equally (as in JAX).

    Example::

        fg.grad(fnp.min)(fnp.array([1., 3., 1.]))   # [0.5, 0., 0.5]
    """)  # noqa: A001 - mirrors numpy
amax = max
amin = min


def ptp(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False) -> Any:
    """Range (maximum - minimum) over the given axes. Differentiable ``numpy.ptp``.

    Example::

        fg.grad(fnp.ptp)(fnp.array([1., 4., 2.]))   # [-1., 1., 0.]
    """
    _no_out(out, "ptp")
    return max(a, axis, keepdims=keepdims) - min(a, axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# var, std


def _ddof(ddof: Any, correction: Any) -> Any:
    return ddof if correction is None else correction


class _Moment(Protocol):
    def __call__(self, a: ArrayLike, axis: Axis = None, dtype: DTypeLike = None, out: Any = None, ddof: float = 0,
                 keepdims: bool = False, *, correction: float | None = None) -> Array: ...


def _moment_raw(name: str) -> _Moment:
    def raw(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: float = 0, keepdims: bool = False, *,
            correction: float | None = None) -> Any:
        if out is not None:
            _no_out(out, name)
        fn = getattr(_ns(a), name)
        if correction is None:
            return fn(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
        return fn(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, correction=correction)

    return raw


def _deviation(a: Any, axes: Any, recenter: Any = False) -> Any:
    """``a - mean(a)`` over ``axes``, conjugated for complex ``a``.

    With ``recenter`` the deviation is centred a second time (the corrected
    two-pass algorithm), so that it sums to zero to rounding even when ``a`` is
    constant but its computed mean is not exactly that constant. ``std``
    divides by a value that is itself at rounding level then.
    """
    d = a - mean(a, axis=axes, keepdims=True)
    if recenter:
        d = d - mean(d, axis=axes, keepdims=True)
    return fnp.conj(d) if is_complex(d) else d


def _inv_dof(a: Any, axes: Any, ddof: Any) -> Any:
    n = _count(a, axes) - ddof
    return 1.0 / n if n > 0 else float("nan")


_var_raw = _moment_raw("var")
_var_raw.__doc__ = """Variance over the given axes. Differentiable ``numpy.var``.

    ``ddof`` (or ``correction``) as in NumPy: the divisor is ``N - ddof``. For
    complex input the variance is real, and the derivative follows JAX's
    convention (``grad`` gives ``2 * conj(a - mean) / (N - ddof)``).

    Example::

        fg.grad(fnp.var)(fnp.array([1., 2., 3.]))   # [-2/3, 0., 2/3]
    """


def _var_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
             keepdims: Any = False, *, correction: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    scale = 2.0 * _inv_dof(a, axes, _ddof(ddof, correction))
    return _like(_expand(g, axes, keepdims) * _deviation(a, axes) * scale, a)


def _var_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
             keepdims: Any = False, *, correction: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    s = sum(_deviation(a, axes) * t, axis=axes, keepdims=keepdims)
    if is_complex(s):
        s = fnp.real(s)
    return _to(s * (2.0 * _inv_dof(a, axes, _ddof(ddof, correction))), _dtype(ans))


var = defprimitive(_var_raw, name="var", vjp=_var_vjp, jvp=_var_jvp, batch_from=_reduction_batch, reads={0: {0}})

_std_raw = _moment_raw("std")
_std_raw.__doc__ = """Standard deviation over the given axes. Differentiable ``numpy.std``.

    ``ddof`` (or ``correction``) as in NumPy. ``std`` is not differentiable
    where its value is zero (a constant slice); there the derivative is 0, the
    smallest subgradient (JAX's ``sqrt(var)`` rule gives nan). Elsewhere it is
    ``(a - mean) / ((N - ddof) * std)``. A slice that is constant up to
    rounding has a tiny non-zero std; there the rule centres ``a - mean`` a
    second time, so the derivative is still (close to) 0 rather than a
    spurious ``-1/N`` per element that ``sqrt(var)`` rules give.

    Example::

        fg.grad(fnp.std)(fnp.array([1., 3.]))   # [-0.5, 0.5]
    """


def _std_scale(ans: Any, a: Any, axes: Any, ddof: Any) -> Any:
    """``1 / ((N - ddof) * std)`` where std != 0, else 0 (no nan, no inf)."""
    zero = fnp.equal(ans, 0)
    safe = ans + _mask(zero, ans)
    return _mask(fnp.logical_not(zero), ans) * (_inv_dof(a, axes, ddof) / safe)


def _std_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
             keepdims: Any = False, *, correction: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    scale = _std_scale(ans, a, axes, _ddof(ddof, correction))
    return _like(_expand(g * scale, axes, keepdims) * _deviation(a, axes, True), a)


def _std_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
             keepdims: Any = False, *, correction: Any = None) -> Any:
    axes = _axes(axis, len(shape(a)))
    s = sum(_deviation(a, axes, True) * t, axis=axes, keepdims=keepdims)
    if is_complex(s):
        s = fnp.real(s)
    return _to(s, _dtype(ans)) * _std_scale(ans, a, axes, _ddof(ddof, correction))


std = defprimitive(_std_raw, name="std", vjp=_std_vjp, jvp=_std_jvp, batch_from=_reduction_batch)


# --------------------------------------------------------------------------
# average (composite: derivatives w.r.t. both ``a`` and ``weights`` come for free)


def average(a: Any, axis: Axis = None, weights: Any = None, returned: bool = False, *, keepdims: bool = False) -> Any:
    """Weighted average over the given axes. Differentiable ``numpy.average``.

    Differentiable in both ``a`` and ``weights``. Weights that sum to zero raise
    ZeroDivisionError as in NumPy for NumPy arrays; on a device backend (where
    that check would copy to the host) the result is inf/nan instead.

    Example::

        fg.grad(lambda w: fnp.average(fnp.array([1., 3.]), weights=w))(fnp.array([1., 1.]))  # [-0.5, 0.5]
    """
    a = fnp.asarray(a)
    nd = len(shape(a))
    axes = None if axis is None else tuple(_normalize_axis_tuple(axis, nd, "axis"))  # in the order given
    if weights is None:
        avg = mean(a, axes, keepdims=keepdims)
        if not returned:
            return avg
        n = fnp.size(a) / _bmax(fnp.size(avg), 1)
        return avg, fnp.full_like(avg, n)
    w = fnp.asarray(weights)
    if shape(w) != shape(a):
        if axes is None:
            raise TypeError(
                "average: axis must be specified when shapes of a and weights differ "
                f"(a has shape {shape(a)}, weights {shape(w)})"
            )
        want = tuple(shape(a)[ax] for ax in axes)
        if shape(w) != want:
            raise ValueError(
                f"average: shape of weights {shape(w)} must be consistent with shape of a "
                f"{shape(a)} along axis {axis} (expected {want})"
            )
        order = tuple(int(i) for i in np.argsort(axes))
        if order != tuple(range(len(axes))):
            w = fnp.transpose(w, order)
        w = fnp.reshape(w, tuple(s if ax in axes else 1 for ax, s in enumerate(shape(a))))
    if _dtype(a).kind in "biu":
        result = np.result_type(_dtype(a), _dtype(w), "f8")
    else:
        result = np.result_type(_dtype(a), _dtype(w))
    a = _to(a, result)
    w = _to(w, result)
    scl = sum(w, axes, keepdims=keepdims)
    raw_scl = _value(scl)
    if namespace_of(raw_scl) is np and np.any(raw_scl == 0.0):
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = sum(a * w, axes, keepdims=keepdims) / scl
    if not returned:
        return avg
    if shape(scl) != shape(avg):
        scl = fnp.broadcast_to(scl, shape(avg))
    return avg, scl


# --------------------------------------------------------------------------
# cumsum, cumprod


def _flat(x: Any, axis: Any) -> Any:
    """(x, axis) with ``axis=None`` meaning: flatten first, as NumPy's scans do."""
    if axis is None:
        return fnp.reshape(x, (-1,)), 0
    return x, operator.index(axis) % _bmax(len(shape(x)), 1)


def _cumsum_raw(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    if out is not None:
        _no_out(out, "cumsum")
    return _ns(a).cumsum(a, axis=axis, dtype=dtype)


_cumsum_raw.__doc__ = """Cumulative sum along an axis (flattened when ``axis`` is None).
    Differentiable ``numpy.cumsum``.

    Example::

        fg.grad(lambda x: fnp.cumsum(x).sum())(fnp.ones(3))   # [3., 2., 1.]
    """


def _cumsum_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    ct = _rcumsum(g, 0 if axis is None else axis)
    if axis is None:
        ct = fnp.reshape(ct, shape(a))
    return _like(ct, a)


cumsum = defprimitive(_cumsum_raw, name="cumsum", vjp=_cumsum_vjp, linear=True, batch_from=_scan_batch,
                      reads={0: {1, 2, 3}})  # a's shape and dtype only
_rcumsum = defprimitive(
    _rcumsum_raw, name="rcumsum", vjp=lambda g, ans, x, axis: cumsum(g, axis), linear=True,
    batch_from=lambda fn: _axis_param_batch(fn),
)


def _cumprod_raw(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    if out is not None:
        _no_out(out, "cumprod")
    return _ns(a).cumprod(a, axis=axis, dtype=dtype)


_cumprod_raw.__doc__ = """Cumulative product along an axis (flattened when ``axis`` is None).
    Differentiable ``numpy.cumprod``.

    The derivative uses exclusive scans, never a division by ``a``: exact when
    ``a`` has zeros, and to any order.

    Example::

        fg.grad(lambda x: fnp.cumprod(x)[-1])(fnp.array([2., 0., 3.]))   # [0., 6., 0.]
    """


def _cumprod_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    # d ans[k] / d a[i] = prod(a[j] for j <= k, j != i) for i <= k:
    # (exclusive product before i) * sum_k g[k] * prod(a[i+1 .. k]).
    x, ax = _flat(a if dtype is None else _to(a, _dtype(ans)), axis)
    ct = _shift(ans, 1, ax, 1.0) * _linrec(_shift(x, -1, ax), g, ax, True)
    if axis is None:
        ct = fnp.reshape(ct, shape(a))
    return _like(ct, a)


def _cumprod_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    x, ax = _flat(a if dtype is None else _to(a, _dtype(ans)), axis)
    t, _ = _flat(_to(t, _dtype(ans)), axis)
    return _linrec(x, t * _shift(ans, 1, ax, 1.0), ax, False)


cumprod = defprimitive(
    _cumprod_raw, name="cumprod", vjp=_cumprod_vjp, jvp=_cumprod_jvp, batch_from=_scan_batch,
)


# --------------------------------------------------------------------------
# sort


def _sort_raw(a: Any, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
              stable: bool | None = None) -> Any:
    if kind is None and order is None and stable is None:
        return _ns(a).sort(a, axis=axis)
    return _ns(a).sort(a, axis=axis, **_opt(kind=kind, order=order, stable=stable))


_sort_raw.__doc__ = """Sorted copy of an array along an axis (flattened when ``axis`` is None).
    Differentiable ``numpy.sort``.

    The cotangent goes back through the sorting permutation; tied values each
    take the cotangent of the slot they were sorted into.

    Example::

        fg.grad(lambda x: fnp.sort(x)[0])(fnp.array([3., 1., 2.]))   # [0., 1., 0.]
    """


def _sort_vjp(g: Any, ans: Any, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
              stable: Any = None) -> Any:
    x, ax = _flat(a, axis)
    inverse = fnp.argsort(fnp.argsort(x, axis=ax), axis=ax)
    ct = _permute(g, inverse, ax)
    return fnp.reshape(ct, shape(a)) if axis is None else ct


def _sort_jvp(t: Any, ans: Any, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
              stable: Any = None) -> Any:
    x, ax = _flat(a, axis)
    t, _ = _flat(t, axis)
    return _permute(t, fnp.argsort(x, axis=ax), ax)


sort = defprimitive(_sort_raw, name="sort", vjp=_sort_vjp, jvp=_sort_jvp, batch_from=_scan_batch)


# --------------------------------------------------------------------------
# nansum, nanmean: NaNs count as absent (zero derivative there)


def _nansum_raw(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    _no_out(out, "nansum")
    return namespace_of(a).nansum(a, axis=axis, dtype=dtype, keepdims=keepdims)


_nansum_raw.__doc__ = """Sum treating NaNs as zero. Differentiable ``numpy.nansum``.

    The derivative w.r.t. a NaN element is 0.

    Example::

        fg.grad(fnp.nansum)(fnp.array([1., fnp.nan]))   # [1., 0.]
    """


def _present(a: Any) -> Any:
    return _mask(fnp.logical_not(fnp.isnan(a)), a)


def _nansum_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: Any = False) -> Any:
    axes = _axes(axis, len(shape(a)))
    return _like(_expand(g, axes, keepdims) * _present(a), a)


def _nansum_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: Any = False) -> Any:
    return sum(t * _present(a), axis, dtype, None, keepdims)


nansum = defprimitive(
    _nansum_raw, name="nansum", vjp=_nansum_vjp, jvp=_nansum_jvp, batch_from=_reduction_batch,
)


def _nanmean_raw(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    _no_out(out, "nanmean")
    return namespace_of(a).nanmean(a, axis=axis, dtype=dtype, keepdims=keepdims)


_nanmean_raw.__doc__ = """Mean ignoring NaNs. Differentiable ``numpy.nanmean``.

    The derivative w.r.t. a NaN element is 0; an all-NaN slice gives nan.

    Example::

        fg.grad(fnp.nanmean)(fnp.array([1., fnp.nan, 3.]))   # [0.5, 0., 0.5]
    """


def _nanmean_vjp(g: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                 keepdims: Any = False) -> Any:
    axes = _axes(axis, len(shape(a)))
    w = _present(a)
    return _like(_expand(g, axes, keepdims) * (w / sum(w, axis=axes, keepdims=True)), a)


def _nanmean_jvp(t: Any, ans: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                 keepdims: Any = False) -> Any:
    axes = _axes(axis, len(shape(a)))
    w = _present(a)
    return _to(sum(t * w, axis=axes, keepdims=keepdims) / sum(w, axis=axes, keepdims=keepdims), _dtype(ans))


nanmean = defprimitive(
    _nanmean_raw, name="nanmean", vjp=_nanmean_vjp, jvp=_nanmean_jvp, batch_from=_reduction_batch,
)
