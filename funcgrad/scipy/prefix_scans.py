"""Prefix scans along one axis with any associative combination, in the array's own namespace, and
``logcumsumexp``, the differentiable scan of ``logaddexp``.

:func:`prefix_scan` works in ``log2(n)`` steps of whole-array operations (each element combined with the
one ``1, 2, 4, ...`` places before it), so it needs no ``ufunc.accumulate`` (CuPy and the fake device have
none) and never leaves the device; :func:`accumulate` uses the namespace's ``ufunc.accumulate`` (one pass)
where there is one and the scan elsewhere. The Tensor layer builds ``cummax``/``cummin`` (values and indices)
on them.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy.special import logcumsumexp

    logcumsumexp(fnp.array([0.0, 0.0, 1000.0]), axis=0)      # [0, log 2, 1000]: no overflow
    fg.grad(lambda x: logcumsumexp(x, 0)[-1])(fnp.zeros(2))  # softmax weights [0.5, 0.5]
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import move_to_front
from ..numpy._util import ndim

__all__ = ["prefix_scan", "accumulate", "logcumsumexp"]


def _along(nd: int, axis: int, part: slice) -> tuple[slice, ...]:
    """The index taking ``part`` of axis ``axis`` of an ``nd``-dimensional array."""
    return (slice(None),) * axis + (part,)


def prefix_scan(arrays: Sequence[Any], axis: int,
                combine: Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]]) -> tuple[Any, ...]:
    """Inclusive scans of the raw ``arrays`` (same shape) along ``axis``: element ``i`` becomes
    ``combine(earlier, later)`` folded over elements ``0..i``, where ``combine`` takes and returns tuples
    (one entry per array) and is associative. Untraced; arrays stay in their namespace (device).

    Example::

        prefix_scan([np.array([1, 3, 2])], 0, lambda a, b: (np.maximum(a[0], b[0]),))   # ([1, 3, 3],)
    """
    ys = tuple(arrays)
    if not ys:
        return ys
    xp = namespace_of(ys[0])
    nd = ys[0].ndim
    axis = operator.index(axis) % max(nd, 1)
    n = ys[0].shape[axis] if nd else 1
    step = 1
    while step < n:
        head = tuple(y[_along(nd, axis, slice(0, step))] for y in ys)
        earlier = tuple(y[_along(nd, axis, slice(0, n - step))] for y in ys)
        later = tuple(y[_along(nd, axis, slice(step, n))] for y in ys)
        ys = tuple(xp.concatenate([h, c], axis=axis) for h, c in zip(head, combine(earlier, later)))
        step *= 2
    return ys


def accumulate(ufunc: Any, x: Any, axis: int) -> Any:
    """``ufunc.accumulate(x, axis)`` where the namespace's ufunc has it (NumPy: one sequential pass), else
    the same scan by :func:`prefix_scan` (CuPy and devices without ``accumulate``). ``ufunc`` is a binary
    associative ufunc of ``x``'s namespace (``xp.maximum``, ``xp.logaddexp``, ...)."""
    direct = getattr(ufunc, "accumulate", None)
    if direct is not None:
        return direct(x, axis=axis)
    (out,) = prefix_scan([x], axis, lambda e, l: (ufunc(e[0], l[0]),))
    return out


def _logcumsumexp_raw(a: Any, axis: int) -> Any:
    xp = namespace_of(a)
    if a.dtype.kind not in "fc":
        a = a.astype(xp.float64)
    if not a.ndim:
        return a + 0
    return accumulate(xp.logaddexp, a, axis)


def _log_positive(v: Any) -> Any:
    """``log(v)`` where ``v > 0``, ``-inf`` elsewhere (differentiable: zero derivative off the positives)."""
    pos = v > 0
    return fnp.where(pos, fnp.log(fnp.where(pos, v, 1.0)), -fnp.inf)


def _reverse_logcumsumexp(z: Any, axis: int) -> Any:
    if not ndim(z):
        return logcumsumexp(z, axis)
    return fnp.flip(logcumsumexp(fnp.flip(z, axis), axis), axis)


def _finite_below(ans: Any) -> Any:
    """``ans`` with ``-inf`` (a prefix of ``-inf`` inputs, whose weights are all zero) read as 0, so that
    the rules' ``x - ans`` is ``-inf`` there rather than NaN (the rules' own derivatives meet such prefixes
    where a tangent's sign splits it)."""
    return fnp.where(ans == -fnp.inf, 0.0, ans)


def _logcumsumexp_vjp(g: Any, ans: Any, a: Any, axis: int) -> Any:
    # d out[i] / d a[j] = exp(a[j] - out[i]) for j <= i; the sum over i >= j is done in log space, for the
    # positive and the negative part of g apart (as PyTorch does), so that nothing overflows.
    ans = _finite_below(ans)
    return (fnp.exp(a + _reverse_logcumsumexp(_log_positive(g) - ans, axis))
            - fnp.exp(a + _reverse_logcumsumexp(_log_positive(-g) - ans, axis)))


def _logcumsumexp_jvp(t: Any, ans: Any, a: Any, axis: int) -> Any:
    ans = _finite_below(ans)
    return (fnp.exp(logcumsumexp(a + _log_positive(t), axis) - ans)
            - fnp.exp(logcumsumexp(a + _log_positive(-t), axis) - ans))


def _logcumsumexp_batch(args: Any, dims: Any) -> Any:
    a, axis = args
    per = ndim(a) - 1
    return logcumsumexp(move_to_front(a, dims[0]), operator.index(axis) % max(per, 1) + 1), 0


_logcumsumexp = defprimitive(
    _logcumsumexp_raw, name="logcumsumexp", vjp=_logcumsumexp_vjp, jvp=_logcumsumexp_jvp,
    batch=_logcumsumexp_batch,
)


def logcumsumexp(a: Any, axis: int = 0) -> Any:
    """``log(cumsum(exp(a), axis))``, computed stably (a scan of ``logaddexp``); real input (integers are
    computed in float64). PyTorch's ``torch.logcumsumexp`` and JAX's ``lax.cumlogsumexp``. Derivatives of
    any order; the gradient is computed in log space, so large and small values do not overflow.

    Example::

        logcumsumexp(fnp.array([1.0, 2.0, 3.0]))     # [1, log(e + e^2), log(e + e^2 + e^3)]
    """
    return _logcumsumexp(a, operator.index(axis))
