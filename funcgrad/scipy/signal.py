"""Differentiable ``scipy.signal`` convolutions: ``convolve``, ``correlate``, ``fftconvolve``,
``convolve2d``, ``correlate2d`` (modes ``full``, ``same``, ``valid``; n-D where SciPy is).

One primitive does the work: the ``full`` or ``valid`` convolution of two arrays over
their trailing axes, computed by ``scipy.signal.convolve`` (``cupyx.scipy.signal`` on
CuPy), with leading stack axes that broadcast (that is what its vmap rule uses: one
call for the whole batch). Its rules are convolutions again (the adjoint of a full
convolution is a valid correlation and vice versa), so every order of derivative
works in both inputs. ``same`` is a slice of ``full``; correlation is convolution
with the flipped (conjugated) second input.

Needs SciPy (``pip install funcgrad[scipy]``) for NumPy arrays.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy.signal import convolve

    fg.grad(lambda k: fnp.sum(convolve(fnp.arange(5.0), k, mode="valid") ** 2))(fnp.ones(3))
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import move_to_front
from ..numpy._util import dtype, ndim, shape
from ._scipy import require_scipy, scipy_function

require_scipy("signal")

__all__ = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d"]

_MODES = ("full", "same", "valid")


# --------------------------------------------------------------------------
# the primitive: _conv(a, v, mode, nd, method) over the trailing nd axes

def _conv_raw(a: Any, v: Any, mode: str = "full", nd: int = 1, method: str = "auto") -> Any:
    xp = namespace_of(a, v)
    fn = scipy_function(xp, "signal", "convolve")
    want = np.result_type(a.dtype, v.dtype, np.float32)
    a, v = a.astype(want, copy=False), v.astype(want, copy=False)
    lead_a, lead_v = tuple(a.shape[: a.ndim - nd]), tuple(v.shape[: v.ndim - nd])
    if not lead_a and not lead_v:
        return fn(a, v, mode=mode, method=method).astype(want, copy=False)
    lead = np.broadcast_shapes(lead_a, lead_v)
    a = xp.broadcast_to(a, lead + tuple(a.shape[a.ndim - nd:]))
    v = xp.broadcast_to(v, lead + tuple(v.shape[v.ndim - nd:]))
    outs = [fn(a[i], v[i], mode=mode, method=method) for i in itertools.product(*(range(n) for n in lead))]
    return xp.reshape(xp.stack(outs), lead + tuple(outs[0].shape)).astype(want, copy=False)


def _flip(x: Any, nd: int) -> Any:
    return fnp.flip(x, axis=tuple(range(ndim(x) - nd, ndim(x))))


def _reduce_to(g: Any, x: Any, nd: int) -> Any:
    """Sum the broadcast stack axes of ``g`` down to the stack shape of ``x``."""
    extra = ndim(g) - ndim(x)
    if extra > 0:
        g = fnp.sum(g, axis=tuple(range(extra)))
    axes = tuple(i for i in range(ndim(x) - nd) if shape(x)[i] == 1 and shape(g)[i] != 1)
    if axes:
        g = fnp.sum(g, axis=axes, keepdims=True)
    if dtype(g).kind == "c" and dtype(x).kind != "c":
        g = fnp.real(g)
    return g


def _conj(x: Any) -> Any:
    return fnp.conj(x) if dtype(x).kind == "c" else x


def _vjp_a(g: Any, ans: Any, a: Any, v: Any, mode: Any = "full", nd: Any = 1, method: Any = "auto") -> Any:
    if mode == "full":
        ct = _conv(g, _flip(_conj(v), nd), "valid", nd, method)
    else:   # valid: a is at least as large as v in every convolved axis
        ct = _conv(g, _flip(_conj(v), nd), "full", nd, method)
    return _reduce_to(ct, a, nd)


def _vjp_v(g: Any, ans: Any, a: Any, v: Any, mode: Any = "full", nd: Any = 1, method: Any = "auto") -> Any:
    if mode == "full":
        ct = _conv(g, _flip(_conj(a), nd), "valid", nd, method)
    else:
        ct = _conv(_flip(_conj(a), nd), g, "valid", nd, method)
    return _reduce_to(ct, v, nd)


def _conv_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, ...]:
    a, v = args[0], args[1]
    params = dict(zip(("mode", "nd", "method"), args[2:]), **kwargs)
    mode, nd, method = params.get("mode", "full"), params.get("nd", 1), params.get("method", "auto")
    da, dv = dims[0], dims[1]
    ra, rv = ndim(a) - (da is not None) - nd, ndim(v) - (dv is not None) - nd
    r = max(ra, rv)

    def lift(x: Any, d: Any, own: int) -> Any:
        if d is None:
            return fnp.reshape(x, (1,) * (r - own + 1) + shape(x))
        x = move_to_front(x, d)
        return fnp.reshape(x, shape(x)[:1] + (1,) * (r - own) + shape(x)[1:])

    return _conv(lift(a, da, ra), lift(v, dv, rv), mode, nd, method), 0


_conv: Callable[..., Any] = defprimitive(
    _conv_raw, name="convolve",
    vjp={0: _vjp_a, 1: _vjp_v},
    jvp={0: lambda t, ans, a, v, *r, **k: _conv(t, v, *r, **k),
         1: lambda t, ans, a, v, *r, **k: _conv(a, t, *r, **k)},
    batch=_conv_batch,
    reads={0: {1}, 1: {0}},
)


# --------------------------------------------------------------------------
# public functions

def _check(in1: Any, in2: Any, mode: str, name: str, nd: int | None = None) -> int:
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    n1, n2 = ndim(in1), ndim(in2)
    if n1 != n2:
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got {n1} and {n2}")
    if nd is not None and n1 != nd:
        raise ValueError(f"{name}: inputs must be {nd}-D arrays, got {n1}-D")
    if n1 == 0:
        return 0
    if 0 in shape(in1) or 0 in shape(in2):
        raise ValueError(f"{name}: inputs must not be empty, got shapes {shape(in1)} and {shape(in2)}")
    return n1


def _convolve(in1: Any, in2: Any, mode: str, method: str, name: str, nd: int | None = None) -> Any:
    n = _check(in1, in2, mode, name, nd)
    if n == 0:
        return in1 * in2
    s1, s2 = shape(in1), shape(in2)
    if mode == "valid":
        if all(p >= q for p, q in zip(s1, s2)):
            return _conv(in1, in2, "valid", n, method)
        if all(q >= p for p, q in zip(s1, s2)):
            return _conv(in2, in1, "valid", n, method)
        raise ValueError(f"{name}: in 'valid' mode one input must be at least as large as the other in every "
                         f"dimension, got shapes {s1} and {s2}")
    full = _conv(in1, in2, "full", n, method)
    if mode == "full":
        return full
    starts = [(q - 1) // 2 for q in s2]
    return full[tuple(slice(st, st + p) for st, p in zip(starts, s1))]


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """N-dimensional convolution. Differentiable ``scipy.signal.convolve`` in both inputs.

    ``mode``: 'full', 'same' (the size of in1, centred) or 'valid'; ``method``:
    'auto', 'direct' or 'fft' (passed to SciPy; derivatives use the same method).

    Example::

        convolve(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5]))   # [0, 1, 2.5, 4, 1.5]
    """
    return _convolve(in1, in2, mode, method, "convolve")


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """N-dimensional cross-correlation. Differentiable ``scipy.signal.correlate`` in both inputs.

    ``correlate(a, v) = convolve(a, flip(conj(v)))`` with SciPy's alignment in every mode.

    Example::

        correlate(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5]))
    """
    return _correlate(in1, in2, mode, method, "correlate")


def _correlate(in1: Any, in2: Any, mode: str, method: str, name: str, nd: int | None = None,
               centre_2d: bool = False) -> Any:
    n = _check(in1, in2, mode, name, nd)
    if n == 0:
        return in1 * _conj(in2)
    rev = _flip(_conj(in2), n)
    if mode != "same":
        if mode == "valid" and not all(p >= q for p, q in zip(shape(in1), shape(in2))):
            # SciPy swaps the inputs (and so reverses the result) when in2 is the larger one
            return _flip(_conj(_convolve(in2, _flip(_conj(in1), n), mode, method, name)), n)
        return _convolve(in1, rev, mode, method, name)
    full = _conv(in1, rev, "full", n, method)
    # 'same' is centred on the full output; correlate2d rounds the other way for even sizes
    starts = [q // 2 if centre_2d else (q - 1) // 2 for q in shape(in2)]
    return full[tuple(slice(st, st + p) for st, p in zip(starts, shape(in1)))]


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """Convolution computed with FFTs. Differentiable ``scipy.signal.fftconvolve`` in both inputs.

    Same result as :func:`convolve` (up to rounding); the derivatives are FFT
    convolutions too. Only ``axes=None`` (every axis) is supported.

    Example::

        fftconvolve(fnp.ones(4), fnp.ones(3), mode="same")
    """
    if axes is not None:
        raise NotImplementedError("funcgrad.scipy.signal.fftconvolve: only axes=None is supported; "
                                  "use fg.vmap over the other axes")
    return _convolve(in1, in2, mode, "fft", "fftconvolve")


def _check_boundary(boundary: str, fillvalue: Any, name: str) -> None:
    if boundary not in ("fill", "pad") or fillvalue != 0:
        raise NotImplementedError(f"funcgrad.scipy.signal.{name}: only boundary='fill' with fillvalue=0 is "
                                  f"supported, got boundary={boundary!r}, fillvalue={fillvalue!r}")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0) -> Any:
    """2-D convolution. Differentiable ``scipy.signal.convolve2d`` in both inputs (zero fill only).

    Example::

        convolve2d(fnp.eye(3), fnp.ones((2, 2)), mode="valid")
    """
    _check_boundary(boundary, fillvalue, "convolve2d")
    return _convolve(in1, in2, mode, "direct", "convolve2d", nd=2)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0) -> Any:
    """2-D cross-correlation. Differentiable ``scipy.signal.correlate2d`` in both inputs (zero fill only).

    Example::

        correlate2d(fnp.eye(3), fnp.ones((2, 2)), mode="same")
    """
    _check_boundary(boundary, fillvalue, "correlate2d")
    return _correlate(in1, in2, mode, "direct", "correlate2d", nd=2, centre_2d=True)
